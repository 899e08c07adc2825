"""``atlas task``: ``list`` and ``current`` read; ``start``, ``update``, ``done`` and ``fail``
are spooled transitions that name the version they change (optimistic concurrency)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from atlas_cli.api import HttpError, Offline
from atlas_cli.core import OFFLINE, OK, Command, Context, Failure, read
from atlas_cli.output import emit, written

if TYPE_CHECKING:
    from atlas_cli.parser import Subcommands

# The state each transition command moves a task to (update: its --state).
TO_STATE = {"done": "completed", "fail": "failed"}


def arguments(commands: Subcommands) -> None:
    if (s := commands.add("task", help="tasks")) is None:
        return
    t = s.add_subparsers(dest="task_cmd", required=True)
    s = t.add_parser("start", parents=[commands.common])
    s.add_argument("title", nargs="+")
    s.add_argument("--priority", default="normal", choices=["low", "normal", "high", "urgent"])
    s.add_argument("--description")
    for name in ("update", "done", "fail"):
        s = t.add_parser(name, parents=[commands.common])
        s.add_argument("id", type=int)
        if name == "update":
            s.add_argument(
                "--state",
                required=True,
                choices=["in_progress", "blocked", "suspended", "cancelled"],
            )
        s.add_argument("--outcome")
    s = t.add_parser("list", parents=[commands.common])
    s.add_argument("--state")
    s.add_argument("--limit", type=int, default=50)
    t.add_parser("current", parents=[commands.common])


def task(args: argparse.Namespace, ctx: Context) -> int:
    if args.task_cmd == "list":
        return task_list(args, ctx)
    if args.task_cmd == "current":
        found = read(ctx, "GET", "tasks/current")
        lines = [f"#{t['id']} [{t['state']}] {t['title']}" for t in found.get("results", [])]
        emit(args, found, "\n".join(lines) or "(no open tasks)")
        return OK
    if args.task_cmd == "start":
        return task_start(args, ctx)
    return task_transition(args, ctx)


def task_list(args: argparse.Namespace, ctx: Context) -> int:
    """The tasks; each one's version is kept, for a transition made offline later."""
    found = read(ctx, "GET", "tasks", state=args.state, limit=args.limit)
    for task in found.get("results", []):
        ctx.spool.put(f"task:{task['id']}:version", str(task["version"]))
    lines = [f"#{t['id']} [{t['state']}] {t['title']}" for t in found.get("results", [])]
    emit(args, found, "\n".join(lines) or "(no tasks)")
    return OK


def task_start(args: argparse.Namespace, ctx: Context) -> int:
    """A new task, started: two spooled operations, the second naming the first's result."""
    create = {
        "title": " ".join(args.title),
        "priority": args.priority,
        "project_key": ctx.register_project(),
    }
    if args.description:
        create["description"] = args.description
    created = ctx.spool.add("task.create", create)
    start = {
        "task_id": {"$ref": created, "field": "id"},
        "expected_version": {"$ref": created, "field": "version"},
        "to_state": "in_progress",
    }
    op_id, _ = ctx.write("task.transition", start)
    return written(args, ctx, op_id, "task start")


def task_transition(args: argparse.Namespace, ctx: Context) -> int:
    """``update``, ``done``, ``fail``: a spooled transition of the task's known version."""
    state = args.state if args.task_cmd == "update" else TO_STATE[args.task_cmd]
    payload: dict[str, Any] = {
        "task_id": args.id,
        "to_state": state,
        "expected_version": task_version(ctx, args.id),
    }
    if getattr(args, "outcome", None):
        payload["outcome"] = args.outcome
    op_id, _ = ctx.write("task.transition", payload)
    return written(args, ctx, op_id, f"task {args.task_cmd}")


def task_version(ctx: Context, task_id: int) -> int | dict[str, Any]:
    """The version to name in a transition: a pending spooled change's result, else the
    server's (online), else the last one this machine saw."""
    for row in reversed(ctx.spool.rows(("pending",), limit=10_000)):
        args = json.loads(row["args"])
        if row["kind"] == "task.transition" and args.get("task_id") == task_id:
            return {"$ref": row["id"], "field": "version"}
    try:
        tasks = ctx.client.call(
            "GET", ctx.client.user_path("tasks"), query={"limit": 200}, timeout=3
        )
        for task in tasks.get("results", []):
            if task.get("id") == task_id:
                return int(task["version"])
    except (Offline, HttpError):
        pass
    cached = ctx.spool.get(f"task:{task_id}:version")
    if cached:
        return int(cached)
    raise Failure(
        f"task {task_id}: its version is unknown offline; run `atlas task list` online first",
        OFFLINE,
    )


COMMANDS: dict[str, Command] = {"task": task}
