"""Memories: ``remember``, ``forget`` and ``log`` write (spooled), ``recall`` and
``history`` read (they need the server)."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

from atlas_cli.core import OK, Command, Context, read
from atlas_cli.output import emit, written

if TYPE_CHECKING:
    from atlas_cli.parser import Subcommands


def arguments(commands: Subcommands) -> None:
    if s := commands.add("remember", help="write a decision or note (spooled)"):
        s.add_argument("category", nargs="?", default=None, help="decision, note, ... (a tag)")
        s.add_argument("text", nargs="+")
        s.add_argument("--title")
        s.add_argument("--tag", action="append")
        s.add_argument("--fact-type", choices=["preference", "identity", "constraint", "world"])
        s.add_argument("--supersedes", action="append", help="a memory id this replaces")
    if s := commands.add("recall", help="hybrid recall (needs the server)"):
        s.add_argument("query", nargs="+")
        s.add_argument("-k", type=int, default=5)
        mode = s.add_mutually_exclusive_group()
        mode.add_argument("--keyword", action="store_true", help="lexical only")
        mode.add_argument("--semantic", action="store_true", help="dense only")
        s.add_argument(
            "--all-projects",
            action="store_true",
            help="every project's memories (default: this project's and those of no project)",
        )
    if s := commands.add("forget", help="forget a memory (or supersede it)"):
        s.add_argument("memory_id")
        s.add_argument(
            "--superseded-by", metavar="TEXT", help="write TEXT as the fact replacing it"
        )
    if s := commands.add("log", help="write a session log line (spooled)"):
        s.add_argument("text", nargs="+")
        s.add_argument("--session")
    if s := commands.add("history", help="recent sessions"):
        s.add_argument("--limit", type=int, default=20)


def remember(args: argparse.Namespace, ctx: Context) -> int:
    text = " ".join(args.text)
    if args.title:
        text = f"{args.title}: {text}"
    tags = list(args.tag or [])
    if args.category:
        tags.append(f"category:{args.category}")
    payload: dict[str, Any] = {"text": text, "tags": tags, "project_key": ctx.register_project()}
    if args.fact_type:
        payload["fact_type"] = args.fact_type
    if args.supersedes:
        payload["supersedes"] = args.supersedes
    op_id, _ = ctx.write("memory.write", payload)
    return written(args, ctx, op_id, "remember")


def forget(args: argparse.Namespace, ctx: Context) -> int:
    if args.superseded_by:
        payload = {
            "text": args.superseded_by,
            "supersedes": [args.memory_id],
            "project_key": ctx.register_project(),
        }
        op_id, _ = ctx.write("memory.write", payload)
        return written(args, ctx, op_id, "superseded")
    op_id, _ = ctx.write("memory.forget", {"memory_id": args.memory_id})
    return written(args, ctx, op_id, "forget")


def recall(args: argparse.Namespace, ctx: Context) -> int:
    """Recall, scoped to this project (its memories and those written from no project)
    unless ``--all-projects``."""
    body: dict[str, Any] = {"query": " ".join(args.query), "k": args.k}
    if not args.all_projects:
        body.update(project=ctx.project.key, include_unscoped=True)
    if args.keyword:
        body["mode"] = "keyword"
    elif args.semantic:
        body["mode"] = "semantic"
    found = read(ctx, "POST", "recall", body)
    hits = found.get("hits", [])
    lines = [
        f"{h.get('id')}  [{h.get('memory_type')}]  {str(h.get('text', ''))[:200]}" for h in hits
    ]
    emit(args, found, "\n".join(lines) or "(nothing recalled)")
    return OK


def log(args: argparse.Namespace, ctx: Context) -> int:
    payload: dict[str, Any] = {
        "text": " ".join(args.text),
        "tags": ["session-log"],
        "project_key": ctx.register_project(),
    }
    session = args.session or os.environ.get("CLAUDE_CODE_SESSION_ID")
    if session:
        payload["session_id"] = session
    op_id, _ = ctx.write("memory.write", payload)
    return written(args, ctx, op_id, "log")


def history(args: argparse.Namespace, ctx: Context) -> int:
    found = read(ctx, "GET", "sessions", limit=args.limit)
    rows = found.get("results", [])
    lines = [
        f"{r['session_id']}  {r['agent']}  {r['started_at']}  "
        f"turns={r['turns']} writes={r['writes']}"
        f"  {r['end_reason'] or 'open'}"
        for r in rows
    ]
    emit(args, found, "\n".join(lines) or "(no sessions)")
    return OK


COMMANDS: dict[str, Command] = {
    "remember": remember,
    "recall": recall,
    "forget": forget,
    "log": log,
    "history": history,
}
