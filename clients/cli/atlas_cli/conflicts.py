"""Open memory-file conflicts as the model and the user read them: above the session's brief
(outside its budget, so no budget trims them away), after ``atlas memory-files``, and once on
stderr; each with what to do about it."""

from __future__ import annotations

import sys
from pathlib import Path

from atlas_cli import memsync
from atlas_cli.core import Context

# What to do about each kind of open memory-file conflict (memsync.Conflict.kind).
CONFLICT_HELP = {
    "edited": (
        "`{path}` was changed here and on {machine}; their version is `{other}`. Merge it "
        "into `{path}` (keep what both say), then delete `{other}`; Atlas sends the merged "
        "file at the next session start (or `atlas memory-files`)."
    ),
    "deleted_there": (
        "`{path}` was deleted on {machine} but changed here (`{other}` says so). To keep it, "
        "delete `{other}`; to accept the deletion, delete `{path}` and `{other}`."
    ),
    "deleted_here": (
        "`{path}` was deleted here but changed on {machine}; their version is `{other}`. To "
        "keep it, rename `{other}` to `{path}`; to confirm the deletion, delete `{other}`."
    ),
    "pending": (
        "`{path}` was changed here and on {machine}; `atlas memory-files --pull` fetches "
        "their version beside it."
    ),
}


def with_conflicts(ctx: Context, text: str, *, project_key: str, folder: Path) -> str:
    """``text`` (the brief) after the open memory-file conflicts' lines (live or cached, whatever
    follows), said once on stderr too."""
    conflicts = memsync.open_conflicts(ctx.spool, project_key=project_key, folder=folder)
    if not conflicts:
        return text
    names = ", ".join(c.path for c in conflicts)
    print(
        f"atlas: {len(conflicts)} memory-file conflict(s) open ({names}) in {folder}: "
        "the session's brief says how to resolve them",
        file=sys.stderr,
    )
    return "\n".join(conflict_lines(conflicts, folder)) + "\n\n" + text


def conflict_lines(conflicts: list[memsync.Conflict], folder: Path) -> list[str]:
    """The brief's first lines: every open memory-file conflict and what to do about it
    (the model can do it: the files are plain markdown in ``folder``). Empty when none."""
    if not conflicts:
        return []
    return [
        f"## Memory-file conflicts: {len(conflicts)} open (resolve them first)",
        f"In {folder}; until resolved, these files are not synced (the others are):",
        *(
            "- " + CONFLICT_HELP[c.kind].format(path=c.path, other=c.other, machine=c.machine)
            for c in conflicts
        ),
    ]
