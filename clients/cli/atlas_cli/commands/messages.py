"""Messages between agents: ``send``, ``reply`` and ``ack`` are spooled; ``check`` reads the
inbox (it needs the server)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from atlas_cli.core import OK, Command, Context, read
from atlas_cli.output import emit, written

if TYPE_CHECKING:
    from atlas_cli.parser import Subcommands


def arguments(commands: Subcommands) -> None:
    if s := commands.add("send", help="message another agent (spooled)"):
        s.add_argument("to")
        s.add_argument("body", nargs="+")
        s.add_argument("--subject")
        s.add_argument(
            "--kind", default="note", choices=["note", "question", "answer", "handoff", "alert"]
        )
        s.add_argument("--to-user")
    if s := commands.add("check", help="unread messages"):
        s.add_argument("--all", action="store_true")
        s.add_argument("--limit", type=int, default=20)
    if s := commands.add("reply"):
        s.add_argument("id", type=int)
        s.add_argument("body", nargs="+")
    if s := commands.add("ack"):
        s.add_argument("id", type=int)


def send(args: argparse.Namespace, ctx: Context) -> int:
    payload: dict[str, Any] = {"to_agent": args.to, "body": " ".join(args.body), "kind": args.kind}
    if args.subject:
        payload["subject"] = args.subject
    if args.to_user:
        payload["to_user"] = args.to_user
    op_id, _ = ctx.write("message.send", payload)
    return written(args, ctx, op_id, "send")


def check(args: argparse.Namespace, ctx: Context) -> int:
    found = read(ctx, "GET", "messages/inbox", unread=not args.all, limit=args.limit)
    lines = [
        f"#{m['id']} from {m['sender']} [{m['kind']}] {m['subject'] or ''}: {m['body'][:200]}"
        for m in found.get("results", [])
    ]
    emit(args, found, "\n".join(lines) or "(no unread messages)")
    return OK


def reply(args: argparse.Namespace, ctx: Context) -> int:
    op_id, _ = ctx.write("message.reply", {"message_id": args.id, "body": " ".join(args.body)})
    return written(args, ctx, op_id, "reply")


def ack(args: argparse.Namespace, ctx: Context) -> int:
    op_id, _ = ctx.write("message.ack", {"message_id": args.id})
    return written(args, ctx, op_id, "ack")


COMMANDS: dict[str, Command] = {"send": send, "check": check, "reply": reply, "ack": ack}
