"""What a command prints: one JSON document with ``--json`` (or when it has no text for
people), else its text; and how a spooled write's outcome reads, with its exit code."""

from __future__ import annotations

import argparse
import json
from typing import Any

from atlas_cli.core import OK, REFUSED, Context


def emit(args: argparse.Namespace, data: Any, human: str | None = None) -> None:
    if getattr(args, "json", False):
        print(json.dumps(data, indent=2, sort_keys=True, default=str))
    elif human is not None:
        if human:
            print(human)
    else:
        print(json.dumps(data, indent=2, sort_keys=True, default=str))


def written(args: argparse.Namespace, ctx: Context, op_id: str, what: str) -> int:
    """Print what became of the spooled operation ``op_id``: applied, refused, or still
    spooled (not an error: a write never fails because the server is away)."""
    out = ctx.outcome(op_id)
    state = out["state"]
    if state == "done":
        human = f"{what}: {out['status']}"
        code = OK
    elif state == "conflict":
        human = f"{what}: conflict: {(out['error'] or {}).get('message')}"
        code = REFUSED
    elif state == "quarantined":
        human = f"{what}: rejected: {(out['error'] or {}).get('message')}"
        code = REFUSED
    else:
        human = f"{what}: spooled (offline or not yet delivered; `atlas sync` sends it)"
        code = OK
    emit(args, out, human)
    return code
