"""SessionStart: say this machine is alive, start the session, bring the memory files both
ways, deliver the spool, and print the brief (open memory-file conflicts first) for the
model, all within the hook's budget; offline, the last brief this machine got."""

from __future__ import annotations

import json
import sys
from typing import Any

from atlas_cli import brief
from atlas_cli.api import HttpError, Offline
from atlas_cli.commands.memory_files import exchange
from atlas_cli.commands.presence import heartbeat
from atlas_cli.conflicts import with_conflicts
from atlas_cli.core import OFFLINE, Context, Failure
from atlas_cli.hooks.session import left, session_id, start_session
from atlas_cli.project import memory_dir


def session_start(ctx: Context, event: dict[str, Any], started: float) -> None:
    session = session_id(event)
    ctx.register_project()
    try:
        heartbeat(ctx, timeout=min(1.5, left(started)), session=None)
    except (Offline, HttpError) as exc:
        print(f"atlas: heartbeat: {exc}", file=sys.stderr)
    if session:
        start_session(ctx, session)
    online = True
    folder = memory_dir(ctx.project.root)
    try:
        exchange(ctx, folder=folder, do_pull=True, budget=left(started) * 0.5)
    except Failure as exc:
        online = exc.code != OFFLINE
        print(f"atlas: memory-files: {exc}", file=sys.stderr)
    report = ctx.deliver(left(started) * 0.6)
    if report.stopped and report.stopped.startswith("offline"):
        online = False
    text = _brief(ctx, started, session) if online else None
    if text is None:
        text = brief.offline(ctx)
    text = with_conflicts(ctx, text, project_key=ctx.project.key, folder=folder)
    print(
        json.dumps(
            {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}
        )
    )


def _brief(ctx: Context, started: float, session: str | None) -> str | None:
    """The server's brief, or None when it could not be had (said on stderr)."""
    try:
        return brief.compose(ctx, timeout=left(started), session=session)
    except Exception as exc:
        print(f"atlas: brief: {exc}", file=sys.stderr)
        return None
