"""PostToolUse: a note written (Write, Edit, MultiEdit) or moved by Bash (``mv``, ``git
mv``) is spooled as an entity upsert, a memory file written is pushed, and the session's
touch counts them; a detached ``atlas sync`` delivers them, never on the agent's path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from atlas_cli import config, memsync, moves
from atlas_cli.core import Context, background_sync
from atlas_cli.hooks.session import session_id, start_session
from atlas_cli.notes import entity_args
from atlas_cli.project import memory_dir


def post_tool_use(ctx: Context, event: dict[str, Any], started: float) -> None:
    if event.get("tool_name") == "Bash":
        touched(ctx, event, spool_bash_moves(ctx, event))
        return
    tool_input = event.get("tool_input") or {}
    file_path = tool_input.get("file_path") if isinstance(tool_input, dict) else None
    if not isinstance(file_path, str) or not file_path.endswith(".md"):
        return
    path = Path(file_path)
    if not path.is_absolute():
        path = ctx.project.root / path
    folder = memory_dir(ctx.project.root)
    queued = _push_memory_files(ctx, folder) if _inside(path, folder) else _spool_note(ctx, path)
    touched(ctx, event, [str(path)] if queued else [])


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


def _push_memory_files(ctx: Context, folder: Path) -> bool:
    """Spool the memory files changed in ``folder``; whether any was."""
    report = memsync.SyncReport()
    memsync.push(
        ctx.spool,
        project_key=ctx.register_project(),
        folder=folder,
        machine_key=config.machine_key(),
        report=report,
    )
    return bool(report.pushed)


def _spool_note(ctx: Context, path: Path) -> bool:
    """Spool the note at ``path``; False for a file that is gone or is not a note (README.md,
    .atlasignore, ...)."""
    if not path.is_file():
        return False
    args = entity_args(ctx, path)
    if args is None:
        return False
    ctx.register_project()
    ctx.spool.add("entity.upsert", args)
    return True


def spool_bash_moves(ctx: Context, event: dict[str, Any]) -> list[str]:
    """A Bash command that moved notes (``mv``, ``git mv``): each moved note is sent with
    the path it came from, so its entity moves with it. The new paths."""
    tool_input = event.get("tool_input") or {}
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if not isinstance(command, str):
        return []
    cwd = Path(str(event.get("cwd") or ctx.project.root))
    moved = moves.moved_notes(moves.bash_moves(command, cwd), ctx.project.root)
    if moved:
        ctx.register_project()
    sent = []
    for old, new in moved:
        args = entity_args(ctx, new, moved_from=old)
        if args is not None:
            ctx.spool.add("entity.upsert", args)
            sent.append(str(new))
    return sent


def touched(ctx: Context, event: dict[str, Any], files: list[str]) -> None:
    """After a hook queued writes of ``files``: the session's touch, then a background sync."""
    if not files:
        return
    session = session_id(event)
    if session:
        start_session(ctx, session)
        ctx.spool.add(
            "session.touch",
            {
                "session_id": session,
                "turns": 0,
                "writes": 1,
                "files": [project_path(ctx, Path(f))[-500:] for f in files],
            },
        )
    background_sync(ctx.profile.name)


def project_path(ctx: Context, path: Path) -> str:
    """``path`` as the project knows it (relative to its root, on every machine alike); one
    outside the project keeps its name only, never this machine's folders."""
    try:
        return path.resolve().relative_to(ctx.project.root.resolve()).as_posix()
    except ValueError:
        return path.name
