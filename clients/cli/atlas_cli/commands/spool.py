"""``atlas spool ls|show|retry|drop``: the operations this machine has spooled, and what
became of them."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from atlas_cli.core import OK, Command, Context, Failure
from atlas_cli.output import emit

if TYPE_CHECKING:
    from atlas_cli.parser import Subcommands

LISTED = ("seq", "id", "kind", "state", "status", "attempts", "error")


def arguments(commands: Subcommands) -> None:
    if (s := commands.add("spool", help="the offline spool")) is None:
        return
    sp = s.add_subparsers(dest="spool_cmd", required=True)
    s = sp.add_parser("ls", parents=[commands.common])
    s.add_argument("--all", action="store_true")
    s.add_argument("--limit", type=int, default=200)
    s = sp.add_parser("show", parents=[commands.common])
    s.add_argument("id")
    s = sp.add_parser("retry", parents=[commands.common])
    s.add_argument("id", nargs="?")
    s = sp.add_parser("drop", parents=[commands.common])
    s.add_argument("id")
    s.add_argument("--yes", action="store_true")


def spool(args: argparse.Namespace, ctx: Context) -> int:
    spool = ctx.spool
    if args.spool_cmd == "ls":
        return spool_ls(args, ctx)
    if args.spool_cmd == "show":
        row = spool.row(args.id)
        if row is None:
            raise Failure(f"no operation {args.id}")
        emit(args, row)
    elif args.spool_cmd == "retry":
        count = spool.retry(args.id)
        emit(args, {"requeued": count}, f"{count} requeued (`atlas sync` sends them)")
    elif args.spool_cmd == "drop":
        if not args.yes:
            raise Failure("dropping loses the operation: add --yes")
        emit(args, {"dropped": spool.drop(args.id)}, "dropped")
    return OK


def spool_ls(args: argparse.Namespace, ctx: Context) -> int:
    """The operations not done (``--all``: every one), oldest first."""
    states = None if args.all else ("pending", "quarantined", "conflict")
    rows = ctx.spool.rows(states, limit=args.limit)
    data = [{k: r[k] for k in LISTED} for r in rows]
    lines = [
        f"{r['seq']:>5} {r['id']} {r['kind']:<18} {r['state']:<11} "
        f"{r['status'] or ''} {r['error'] or ''}"
        for r in rows
    ]
    emit(
        args,
        {"operations": data, "counts": ctx.spool.counts()},
        "\n".join(lines) or "(spool empty)",
    )
    return OK


COMMANDS: dict[str, Command] = {"spool": spool}
