"""What every hook shares (its time budget, the event's session) and the session's own
hooks: its start spooled once, a turn counted at Stop, its end at SessionEnd."""

from __future__ import annotations

import os
import time
from typing import Any

from atlas_cli import config
from atlas_cli.core import Context, background_sync

HOOK_BUDGET_S = float(os.environ.get("ATLAS_HOOK_BUDGET_S", "3"))
# SessionEnd's reasons as the server names them (anything else: other).
REASONS = {"clear": "clear", "logout": "logout", "prompt_input_exit": "user_exit", "other": "other"}


def left(started: float, budget: float = HOOK_BUDGET_S) -> float:
    """Seconds left of ``budget`` since ``started`` (``time.monotonic``)."""
    return max(0.0, budget - (time.monotonic() - started))


def session_id(event: dict[str, Any]) -> str | None:
    value = event.get("session_id") or os.environ.get("CLAUDE_CODE_SESSION_ID")
    return str(value) if value else None


def start_session(ctx: Context, session: str) -> None:
    """Spool the session's start once (a hook that missed SessionStart starts it too)."""
    marker = f"session:{session}"
    if ctx.spool.get(marker) is None:
        key = ctx.register_project()
        args = {"session_id": session, "project_key": key}
        if ctx.spool.get("machine-registered"):  # the server knows this machine (a heartbeat)
            args["machine_key"] = config.machine_key()
        ctx.spool.add("session.start", args)
        ctx.spool.put(marker, "1")


def stop(ctx: Context, event: dict[str, Any], started: float) -> None:
    session = session_id(event)
    if session:
        start_session(ctx, session)
        ctx.spool.add("session.touch", {"session_id": session, "turns": 1})
        background_sync(ctx.profile.name)


def session_end(ctx: Context, event: dict[str, Any], started: float) -> None:
    session = session_id(event)
    if session:
        start_session(ctx, session)
        reason = REASONS.get(
            str(event.get("reason", "")), "completed" if not event.get("reason") else "other"
        )
        ctx.spool.add("session.end", {"session_id": session, "reason": reason})
    ctx.deliver(left(started))
