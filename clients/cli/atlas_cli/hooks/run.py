"""``atlas hook NAME``: run one Claude Code hook on the event Claude Code writes to stdin.
It exits 0 always, within its budget (``ATLAS_HOOK_BUDGET_S``, 3 s); problems go to stderr."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from atlas_cli import config
from atlas_cli.core import OK, Context
from atlas_cli.hooks.checkpoint import pre_compact
from atlas_cli.hooks.files import post_tool_use
from atlas_cli.hooks.prompt import user_prompt_submit
from atlas_cli.hooks.session import HOOK_BUDGET_S, session_end, stop
from atlas_cli.hooks.session_start import session_start
from atlas_cli.spool import SpoolError

Hook = Callable[[Context, dict[str, Any], float], None]
HOOKS: dict[str, Hook] = {
    "session-start": session_start,
    "post-tool-use": post_tool_use,
    "stop": stop,
    "session-end": session_end,
    "pre-compact": pre_compact,
    "user-prompt-submit": user_prompt_submit,
}


def run(args: argparse.Namespace) -> int:
    """Run one Claude Code hook: exit 0 always, within the budget; problems on stderr."""
    started = time.monotonic()
    try:
        event = _event()
        if event.get("cwd") and not os.environ.get("CLAUDE_PROJECT_DIR"):
            os.environ["CLAUDE_PROJECT_DIR"] = str(event["cwd"])
        ctx = Context(config.profile(args.profile), timeout=min(HOOK_BUDGET_S, 5.0))
        try:
            HOOKS[args.name](ctx, event, started)
        finally:
            ctx.close()
    except SpoolError as exc:
        print(f"atlas hook {args.name}: {exc}", file=sys.stderr)
    except Exception as exc:  # a hook never breaks the agent's session
        print(f"atlas hook {args.name}: {type(exc).__name__}: {exc}", file=sys.stderr)
    return OK


def _event() -> dict[str, Any]:
    """The hook's event: stdin's JSON object, else empty (not JSON: said on stderr)."""
    raw = sys.stdin.read(4_000_000) if not sys.stdin.isatty() else ""
    try:
        event = json.loads(raw) if raw.strip() else {}
    except ValueError:
        print("atlas hook: stdin was not JSON; ignored", file=sys.stderr)
        event = {}
    return event if isinstance(event, dict) else {}
