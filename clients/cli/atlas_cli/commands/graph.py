"""The knowledge graph of the project's notes: ``entity index-file|index-all`` send notes
(spooled), ``graph search|related|check-blockers|semantic-diff|gen-handoff`` read it, and
``graph reconcile`` is ``commands.reconcile``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from atlas_cli import brief, config, graphtext
from atlas_cli.commands import reconcile
from atlas_cli.core import OK, Command, Context, read
from atlas_cli.notes import entity_args
from atlas_cli.output import emit

if TYPE_CHECKING:
    from atlas_cli.parser import Subcommands


def arguments(commands: Subcommands) -> None:
    if s := commands.add("entity", help="index markdown files as entities"):
        e = s.add_subparsers(dest="entity_cmd", required=True)
        s = e.add_parser("index-file", parents=[commands.common])
        s.add_argument("path")
        s = e.add_parser("index-all", parents=[commands.common])
        s.add_argument("--root")
    if s := commands.add("graph", help="the knowledge graph"):
        graph_arguments(s.add_subparsers(dest="graph_cmd", required=True), commands.common)


def graph_arguments(
    g: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    s = g.add_parser("search", parents=[common])
    s.add_argument("query", nargs="+")
    s.add_argument("-k", type=int, default=10)
    s = g.add_parser("related", parents=[common], help="what relates to a note")
    s.add_argument("key", help="the note: its key (front matter id), path, file name or title")
    s.add_argument("--depth", type=int, choices=[1, 2], default=1)
    s = g.add_parser("check-blockers", parents=[common], help="what is blocked, and by what")
    s.add_argument(
        "--stale-days",
        type=float,
        default=0,
        help="only blockers idle at least this many days (default 0: every current blocker)",
    )
    s = g.add_parser("semantic-diff", parents=[common], help="what changed between two moments")
    s.add_argument("since", help="ISO date or time (a date: its start)")
    s.add_argument("until", help="ISO date or time (a date: its end, the day included)")
    s = g.add_parser("gen-handoff", parents=[common], help="the handoff brief")
    s.add_argument("--hours", type=int, default=24)
    s.add_argument(
        "--budget",
        type=int,
        help="its size in estimated tokens (100-32000; default: ATLAS_BRIEF_TOKENS, the "
        "profile's brief_tokens, else the server's 1500)",
    )
    s.add_argument(
        "--narrate", action="store_true", help="add the chat model's narrative (if configured)"
    )
    reconcile.arguments(g.add_parser("reconcile", parents=[common]))


def entity(args: argparse.Namespace, ctx: Context) -> int:
    ctx.register_project()
    paths = [Path(args.path)] if args.entity_cmd == "index-file" else _markdown_files(args, ctx)
    spooled = [a for a in (entity_args(ctx, p) for p in paths) if a is not None]
    ids = [ctx.spool.add("entity.upsert", a) for a in spooled]
    report = ctx.deliver(ctx.timeout)
    left = len(paths) - len(ids)
    emit(
        args,
        {"spooled": len(ids), "not_notes": left, "delivery": report.as_dict()},
        f"{len(ids)} entities spooled; sent {report.sent}, pending {report.pending}"
        + (f"; {left} files not sent (not notes, or matched by .atlasignore)" if left else ""),
    )
    return OK


def _markdown_files(args: argparse.Namespace, ctx: Context) -> list[Path]:
    """``index-all``: the markdown files under ``--root`` (default: the project's), hidden
    folders and node_modules left out."""
    return [
        p
        for p in sorted(Path(args.root or ctx.project.root).rglob("*.md"))
        if not any(
            part.startswith(".") or part == "node_modules"
            for part in p.relative_to(ctx.project.root).parts
        )
    ]


def graph(args: argparse.Namespace, ctx: Context) -> int:
    key = ctx.project.key
    sub = args.graph_cmd
    if sub == "search":
        body = {"query": " ".join(args.query), "project": key, "k": args.k}
        found = read(ctx, "POST", "graph/search", body)
        lines = [
            f"{r['entity']['key']}  {r['entity'].get('status') or ''}  {r['entity'].get('title')}"
            for r in found.get("results", [])
        ]
        emit(args, found, "\n".join(lines) or "(no entities)")
    elif sub == "related":
        found = read(ctx, "GET", "graph/related", project=key, key=args.key, depth=args.depth)
        emit(args, found, graphtext.related_text(found))
    elif sub == "check-blockers":
        found = read(ctx, "GET", "graph/blockers", project=key, stale_days=args.stale_days)
        emit(args, found, graphtext.blockers_text(found))
    elif sub == "semantic-diff":
        until = graphtext.until_moment(args.until)
        found = read(ctx, "GET", "graph/diff", project=key, since=args.since, until=until)
        emit(args, found, graphtext.diff_text(found))
    elif sub == "gen-handoff":
        found = handoff(args, ctx)
        emit(args, found, graphtext.handoff_text(found))
    elif sub == "reconcile":
        return reconcile.reconcile(args, ctx)
    return OK


def handoff(args: argparse.Namespace, ctx: Context) -> Any:
    """The handoff brief, as JSON (the default output): the brief is its "markdown" field."""
    return read(
        ctx,
        "GET",
        "graph/handoff",
        project=ctx.project.key,
        hours=args.hours,
        machine_key=config.machine_key(),
        narrate=args.narrate or None,
        token_budget=brief.budget(ctx, args.budget),
    )


COMMANDS: dict[str, Command] = {"entity": entity, "graph": graph}
