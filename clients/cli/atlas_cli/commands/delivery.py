"""``atlas sync``: deliver the spool (the writes made here, offline or not yet sent) within a
budget. "sync" means this alone; memory files are ``atlas memory-files``. Hooks run it
detached (``--background --quiet``: ``core.background_sync``)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from atlas_cli.core import AUTH, OFFLINE, OK, PENDING, REFUSED, Command, Context
from atlas_cli.output import emit
from atlas_cli.spool import Report

if TYPE_CHECKING:
    from atlas_cli.parser import Subcommands


def arguments(commands: Subcommands) -> None:
    if s := commands.add("sync", help="deliver the spool (the writes made here)"):
        s.add_argument("--budget", type=float, default=60.0, help="seconds at most (60)")
        s.add_argument("--batch-size", type=int, default=100, help=argparse.SUPPRESS)
        s.add_argument("--quiet", action="store_true")
        s.add_argument("--background", action="store_true", help=argparse.SUPPRESS)


def sync(args: argparse.Namespace, ctx: Context) -> int:
    # a batch of 100 store writes may take longer than one interactive call: 30 s at least
    report = ctx.deliver(
        args.budget, ignore_backoff=not args.background, call_timeout=max(ctx.timeout, 30.0)
    )
    data = {**report.as_dict(), "spool": ctx.spool.counts()}
    human = (
        f"sent {report.sent}: {report.applied} applied, {report.duplicate} duplicate, "
        f"{len(report.conflict)} conflict, {len(report.rejected)} rejected, "
        f"{report.retry} to retry; "
        f"{report.pending} pending" + (f"\nstopped: {report.stopped}" if report.stopped else "")
    )
    if not args.quiet:
        emit(args, data, human)
    return sync_exit(report)


def sync_exit(report: Report) -> int:
    """What a sync's exit says: 4 the token was refused, 3 offline, 7 anything still pending
    (said on stderr: throttled, budget spent, the server failing), 5 something refused."""
    if report.auth_failed:
        return AUTH
    if report.stopped and report.stopped.startswith("offline"):
        return OFFLINE
    if report.pending:
        why = report.stopped or "not delivered yet"
        print(f"atlas: {report.pending} operations still pending: {why}", file=sys.stderr)
        return PENDING
    return REFUSED if report.rejected or report.conflict else OK


COMMANDS: dict[str, Command] = {"sync": sync}
