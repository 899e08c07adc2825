"""A note (a markdown file of the project) as the knowledge graph's ``entity.upsert`` takes
it: its path in the project, its text without private spans, the version this machine last
saw, and the path it moved from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from atlas_cli import config, memsync, moves
from atlas_cli.core import Context
from atlas_cli.ignore import is_note, note_rules
from atlas_cli.private import strip_private


def entity_args(ctx: Context, path: Path, moved_from: str | None = None) -> dict[str, Any] | None:
    """The upsert of a note, or None for a file that is not one (outside the project, not a
    note by default or matched by ``.atlasignore``: see ``atlas_cli.ignore``). Its private
    spans are removed."""
    path = path.resolve()
    try:
        rel = path.relative_to(ctx.project.root).as_posix()
    except ValueError:
        return None
    if not is_note(rel, note_rules(ctx.project.root)):
        return None
    content = strip_private(path.read_text(encoding="utf-8"))
    args: dict[str, Any] = {
        "project_key": ctx.project.key,
        "path": rel,
        "content": content,
        "machine_key": config.machine_key(),
    }
    base = memsync.entity_base(ctx.spool, ctx.project.key, rel)
    if base is None and moved_from is None:  # new here: the same note from a path now gone?
        moved_from = moves.gone_twin(ctx.spool, ctx.project.key, ctx.project.root, rel, content)
    if moved_from is not None:
        args["moved_from"] = moved_from
        base = memsync.entity_base(ctx.spool, ctx.project.key, moved_from)
    if base is not None:
        args["base_version"] = base
    return args
