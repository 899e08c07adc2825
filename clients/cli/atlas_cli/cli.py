"""``atlas``: the command line (and ``bridge``, the source design's spelling of it).

Every write is spooled before the network and never fails because the server is away; every
read needs the server and exits 3 when it is unreachable. ``--json`` prints one JSON document.
Exit codes: 0 ok, 1 error, 2 usage, 3 offline (a read, or a sync), 4 token missing, invalid,
revoked or not bound to an agent, 5 refused by the server (rejected or conflict), 6 the spool
cannot take the write, 7 a sync left operations pending (throttled, out of time, server error).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

from atlas_cli import __version__, account, brief, config, graphtext, hooks, memsync, moves
from atlas_cli.api import Client, HttpError, Offline
from atlas_cli.core import (
    AUTH,
    ERROR,
    OFFLINE,
    OK,
    PENDING,
    REFUSED,
    SPOOL,
    USAGE,
    Context,
    Failure,
    background_sync,
)
from atlas_cli.ignore import is_note, note_rules
from atlas_cli.private import strip_private
from atlas_cli.spool import Report, SpoolError

HOOK_BUDGET_S = float(os.environ.get("ATLAS_HOOK_BUDGET_S", "3"))


# --- output -------------------------------------------------------------------------------
def emit(args: argparse.Namespace, data: Any, human: str | None = None) -> None:
    if getattr(args, "json", False):
        print(json.dumps(data, indent=2, sort_keys=True, default=str))
    elif human is not None:
        if human:
            print(human)
    else:
        print(json.dumps(data, indent=2, sort_keys=True, default=str))


def written(args: argparse.Namespace, ctx: Context, op_id: str, what: str) -> int:
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


def read(ctx: Context, method: str, rest: str, body: Any = None, **query: Any) -> Any:
    client = ctx.client
    try:
        return client.call(method, client.user_path(rest), body, query=query or None)
    except Offline as exc:
        raise Failure(f"offline: {exc} (reads need the server)", OFFLINE) from None
    except HttpError as exc:
        code = AUTH if exc.status in (401, 403) else REFUSED if exc.status < 500 else ERROR
        raise Failure(f"{exc.status} {exc.code}: {exc.message}", code, exc.body) from None


# --- commands -----------------------------------------------------------------------------
def cmd_login(args: argparse.Namespace) -> int:
    """Save a profile, after the server confirmed the token is one user's, bound to an agent.
    Only the profile named (``--profile``, else the default one) is written."""
    name = config.profile_name(args.profile)
    token = login_token(args)
    user, agent = args.user, args.agent
    if args.no_check:
        if not user:
            raise Failure("--no-check needs --user (nothing asks the server who you are)", USAGE)
        agent = agent or "claude-code"
    elif not token:
        raise Failure(
            "no token: --token T (or - to read stdin), --token-env NAME or ATLAS_TOKEN; "
            + account.how_to_get_one(user, agent),
            AUTH,
        )
    else:
        user, agent = account.verify(
            url=args.url, token=token, user=user, agent=agent, timeout=args.timeout
        )
    path = config.login(
        name=name,
        url=args.url,
        user=user,
        agent=agent,
        token=token if args.token else None,
        token_env=args.token_env,
        brief_tokens=args.brief_tokens,
    )
    if args.default:
        data = config.load()
        data["default_profile"] = name
        config.save(data)
    checked = "not checked (--no-check)" if args.no_check else "checked with the server"
    emit(
        args,
        {
            "profile": name,
            "user": user,
            "agent": agent,
            "checked": not args.no_check,
            "token_file": str(path) if path else None,
        },
        f"profile {name} saved: {user} as {agent} on {args.url} (token {checked})",
    )
    return OK


def login_token(args: argparse.Namespace) -> str | None:
    """The token login was given: --token (``-``: stdin), else the variable --token-env
    names, else ATLAS_TOKEN."""
    token = args.token
    if token == "-":  # noqa: S105 - "read it from stdin", not a password
        token = sys.stdin.readline().strip()
    if not token and args.token_env:
        token = os.environ.get(args.token_env, "").strip()
    return token or os.environ.get("ATLAS_TOKEN", "").strip() or None


def cmd_status(args: argparse.Namespace, ctx: Context) -> int:
    counts = ctx.spool.counts()
    conflicts = memsync.open_conflicts(
        ctx.spool, project_key=ctx.project.key, folder=_memory_dir(ctx)
    )
    refused = ctx.spool.refused_recently(exclude_prefix="memory_file.")
    reachable = True
    try:
        ctx.client.call("GET", ctx.client.user_path("agents"), timeout=3)
    except (Offline, HttpError):
        reachable = False
    data = {
        "profile": ctx.profile.name,
        "url": ctx.profile.url,
        "user": ctx.profile.user,
        "agent": ctx.profile.agent,
        "machine": config.machine_key(),
        "project": {"root": str(ctx.project.root), "key": ctx.project.key},
        "online": reachable,
        "spool": counts,
        "conflicts": {
            "open": len(conflicts),
            "memory_files": [c.as_dict() for c in conflicts],
            "refused_operations": refused,
        },
    }
    human = (
        f"{ctx.profile.name}: {ctx.profile.url} as {ctx.profile.user}/{ctx.profile.agent} "
        f"({'online' if reachable else 'OFFLINE'})\n"
        f"project {ctx.project.name} {ctx.project.key[:12]}\n"
        f"spool: {counts['pending']} pending, {counts['quarantined']} quarantined\n"
        f"conflicts: {len(conflicts)} open"
        + (
            f" ({', '.join(c.path for c in conflicts)}: see `atlas sync-memories`)"
            if conflicts
            else ""
        )
        + (
            f"; {refused} operations refused by the server lately (`atlas spool ls`)"
            if refused
            else ""
        )
    )
    emit(args, data, human)
    return OK


def cmd_doctor(args: argparse.Namespace, ctx: Context) -> int:
    checks: list[dict[str, Any]] = []

    def check(name: str, ok: bool, detail: str) -> None:
        checks.append({"check": name, "ok": ok, "detail": detail})

    check("token", bool(ctx.profile.token), f"from {ctx.profile.token_source}")
    for name, ok, detail in server_checks(ctx):
        check(name, ok, detail)
    check("project", True, f"{ctx.project.root} -> {ctx.project.key[:12]}")
    places = [
        hooks.settings_path("user", ctx.project.root),
        hooks.settings_path("project", ctx.project.root),
    ]
    found = {str(p): hooks.installed(p) for p in places}
    check("hooks", any(found.values()), json.dumps(found))
    counts = ctx.spool.counts()
    inside = (
        ctx.spool.path.resolve().is_relative_to(ctx.project.root)
        if ctx.project.root != Path("/")
        else False
    )
    check(
        "spool",
        counts["quarantined"] == 0 and not inside,
        f"{ctx.spool.path}: {counts}" + (" (inside the project!)" if inside else ""),
    )
    ok = all(c["ok"] for c in checks)
    human = "\n".join(
        f"{'ok  ' if c['ok'] else 'FAIL'} {c['check']}: {c['detail']}" for c in checks
    )
    emit(args, {"ok": ok, "checks": checks}, human)
    return OK if ok else ERROR


def server_checks(ctx: Context) -> list[tuple[str, bool, str]]:
    """The server answers (``/healthz``), knows the token, and the token is this profile's
    user's, bound to its agent. A server that is down fails the first and skips the rest."""
    client = ctx.client
    try:
        client.health(timeout=3)
    except (Offline, HttpError) as exc:
        return [("server", False, str(exc)), ("token valid", False, "not checked: no server")]
    done = [("server", True, f"{ctx.profile.url} answers")]
    try:
        info = account.token_info(client, timeout=3)
    except Failure as exc:
        return [*done, ("token valid", False, str(exc))]
    done.append(("token valid", True, f"{info.get('name')} ({info.get('tenant', {}).get('slug')})"))
    problem = account.bound_problem(info, user=ctx.profile.user, agent=ctx.profile.agent)
    detail = (
        f"{problem}; {account.how_to_get_one(ctx.profile.user, ctx.profile.agent)}"
        if problem
        else f"user {info.get('user')}, agent {info.get('agent')}"
    )
    return [*done, ("token bound to agent", problem is None, detail)]


def cmd_remember(args: argparse.Namespace, ctx: Context) -> int:
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


def cmd_forget(args: argparse.Namespace, ctx: Context) -> int:
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


def cmd_recall(args: argparse.Namespace, ctx: Context) -> int:
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


def cmd_log(args: argparse.Namespace, ctx: Context) -> int:
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


def cmd_history(args: argparse.Namespace, ctx: Context) -> int:
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


def _task_version(ctx: Context, task_id: int) -> int | dict[str, Any]:
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


def cmd_task(args: argparse.Namespace, ctx: Context) -> int:
    if args.task_cmd == "list":
        found = read(ctx, "GET", "tasks", state=args.state, limit=args.limit)
        for task in found.get("results", []):
            ctx.spool.put(f"task:{task['id']}:version", str(task["version"]))
        lines = [f"#{t['id']} [{t['state']}] {t['title']}" for t in found.get("results", [])]
        emit(args, found, "\n".join(lines) or "(no tasks)")
        return OK
    if args.task_cmd == "current":
        found = read(ctx, "GET", "tasks/current")
        lines = [f"#{t['id']} [{t['state']}] {t['title']}" for t in found.get("results", [])]
        emit(args, found, "\n".join(lines) or "(no open tasks)")
        return OK
    if args.task_cmd == "start":
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
    state = {
        "done": "completed",
        "fail": "failed",
        "update": args.state if args.task_cmd == "update" else None,
    }[args.task_cmd]
    payload: dict[str, Any] = {
        "task_id": args.id,
        "to_state": state,
        "expected_version": _task_version(ctx, args.id),
    }
    if getattr(args, "outcome", None):
        payload["outcome"] = args.outcome
    op_id, _ = ctx.write("task.transition", payload)
    return written(args, ctx, op_id, f"task {args.task_cmd}")


def cmd_send(args: argparse.Namespace, ctx: Context) -> int:
    payload: dict[str, Any] = {"to_agent": args.to, "body": " ".join(args.body), "kind": args.kind}
    if args.subject:
        payload["subject"] = args.subject
    if args.to_user:
        payload["to_user"] = args.to_user
    op_id, _ = ctx.write("message.send", payload)
    return written(args, ctx, op_id, "send")


def cmd_check(args: argparse.Namespace, ctx: Context) -> int:
    found = read(ctx, "GET", "messages/inbox", unread=not args.all, limit=args.limit)
    lines = [
        f"#{m['id']} from {m['sender']} [{m['kind']}] {m['subject'] or ''}: {m['body'][:200]}"
        for m in found.get("results", [])
    ]
    emit(args, found, "\n".join(lines) or "(no unread messages)")
    return OK


def cmd_reply(args: argparse.Namespace, ctx: Context) -> int:
    op_id, _ = ctx.write("message.reply", {"message_id": args.id, "body": " ".join(args.body)})
    return written(args, ctx, op_id, "reply")


def cmd_ack(args: argparse.Namespace, ctx: Context) -> int:
    op_id, _ = ctx.write("message.ack", {"message_id": args.id})
    return written(args, ctx, op_id, "ack")


def heartbeat(ctx: Context, *, timeout: float, session: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "machine_key": config.machine_key(),
        "label": config.machine_label(),
        "os": config.os_name(),
        "client_version": __version__,
    }
    if session:
        body["session_id"] = session
    presence = ctx.client.call("POST", ctx.client.user_path("heartbeat"), body, timeout=timeout)
    ctx.spool.put("machine-registered", "1")
    return presence if isinstance(presence, dict) else {}


def cmd_heartbeat(args: argparse.Namespace, ctx: Context) -> int:
    try:
        presence = heartbeat(ctx, timeout=ctx.timeout)
    except Offline as exc:
        emit(
            args,
            {"online": False},
            f"offline, heartbeat not sent (not spooled: an old one says nothing): {exc}",
        )
        return OK
    except HttpError as exc:
        raise Failure(str(exc), AUTH if exc.status in (401, 403) else REFUSED) from None
    emit(
        args,
        presence,
        f"{presence.get('agent')} on {presence.get('machine', {}).get('label')}: "
        f"{presence.get('status')}",
    )
    return OK


def cmd_sync(args: argparse.Namespace, ctx: Context) -> int:
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


def memory_sync(ctx: Context, *, folder: Path, do_pull: bool, budget: float) -> memsync.SyncReport:
    report = memsync.SyncReport()
    key = ctx.register_project()
    machine = config.machine_key()
    memsync.push(ctx.spool, project_key=key, folder=folder, machine_key=machine, report=report)
    ctx.deliver(budget)
    if do_pull:
        try:
            remote = read(ctx, "GET", "memory-files", project=key, content=True)
        except Failure as exc:
            if exc.code != OFFLINE:
                raise
            # The push is spooled (a write never fails offline); the pull waits for the server.
            report.pull_skipped = str(exc)
            return report
        memsync.pull(
            ctx.spool,
            remote.get("results", []),
            project_key=key,
            folder=folder,
            machine_key=machine,
            report=report,
        )
    return report


def cmd_sync_memories(args: argparse.Namespace, ctx: Context) -> int:
    folder = Path(args.dir) if args.dir else _memory_dir(ctx)
    report = memory_sync(ctx, folder=folder, do_pull=args.pull, budget=args.budget)
    data = {"folder": str(folder), **report.as_dict()}
    human = (
        f"{folder}: pushed {len(report.pushed)}, deleted {len(report.deleted)}, "
        f"pulled {len(report.pulled)}, "
        f"removed {len(report.removed)}, conflicts {len(report.conflicts)}"
        + "".join(f"\nconflict: {c}" for c in report.conflicts)
        + "".join(f"\nskipped: {c}" for c in report.skipped)
    )
    if report.conflicts:
        conflicts = memsync.open_conflicts(ctx.spool, project_key=ctx.project.key, folder=folder)
        human += "\n" + "\n".join(conflict_lines(conflicts, folder))
    if report.pull_skipped:
        human += f"\npull skipped: {report.pull_skipped}"
        print(f"atlas: pull skipped, {report.pull_skipped}", file=sys.stderr)
    emit(args, data, human)
    return REFUSED if report.conflicts else OK


def _memory_dir(ctx: Context) -> Path:
    from atlas_cli.project import claude_memory_dir

    explicit = os.environ.get("ATLAS_MEMORY_DIR")
    return Path(explicit) if explicit else claude_memory_dir(ctx.project.root)


def entity_args(ctx: Context, path: Path, moved_from: str | None = None) -> dict[str, Any] | None:
    """The upsert of a note, or None for a file that is not one (outside the project, not a
    note by default or matched by ``.atlasignore``: see ``atlas_cli.ignore``). Its private
    spans are removed."""
    path = path.resolve()
    try:
        rel = path.relative_to(ctx.project.root).as_posix()
    except ValueError:
        return None
    if not is_note(rel, note_rules(ctx.project.root)):
        return None
    content = strip_private(path.read_text(encoding="utf-8"))
    args: dict[str, Any] = {
        "project_key": ctx.project.key,
        "path": rel,
        "content": content,
        "machine_key": config.machine_key(),
    }
    base = memsync.entity_base(ctx.spool, ctx.project.key, rel)
    if base is None and moved_from is None:  # new here: the same note from a path now gone?
        moved_from = moves.gone_twin(ctx.spool, ctx.project.key, ctx.project.root, rel, content)
    if moved_from is not None:
        args["moved_from"] = moved_from
        base = memsync.entity_base(ctx.spool, ctx.project.key, moved_from)
    if base is not None:
        args["base_version"] = base
    return args


def spool_bash_moves(ctx: Context, event: dict[str, Any]) -> list[str]:
    """A Bash command that moved notes (``mv``, ``git mv``): each moved note is sent with
    the path it came from, so its entity moves with it. The new paths."""
    tool_input = event.get("tool_input") or {}
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    if not isinstance(command, str):
        return []
    cwd = Path(str(event.get("cwd") or ctx.project.root))
    moved = moves.moved_notes(moves.bash_moves(command, cwd), ctx.project.root)
    if moved:
        ctx.register_project()
    sent = []
    for old, new in moved:
        args = entity_args(ctx, new, moved_from=old)
        if args is not None:
            ctx.spool.add("entity.upsert", args)
            sent.append(str(new))
    return sent


def cmd_entity(args: argparse.Namespace, ctx: Context) -> int:
    ctx.register_project()
    paths = (
        [Path(args.path)]
        if args.entity_cmd == "index-file"
        else [
            p
            for p in sorted(Path(args.root or ctx.project.root).rglob("*.md"))
            if not any(
                part.startswith(".") or part == "node_modules"
                for part in p.relative_to(ctx.project.root).parts
            )
        ]
    )
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


def cmd_graph(args: argparse.Namespace, ctx: Context) -> int:
    key = ctx.project.key
    sub = args.graph_cmd
    if sub == "search":
        found = read(
            ctx,
            "POST",
            "graph/search",
            {"query": " ".join(args.query), "project": key, "k": args.k},
        )
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
        found = read(
            ctx,
            "GET",
            "graph/handoff",
            project=key,
            hours=args.hours,
            machine_key=config.machine_key(),
            narrate=args.narrate or None,
            token_budget=brief.budget(ctx, args.budget),
        )  # JSON (the default output): the brief is its "markdown" field
        emit(args, found, graphtext.handoff_text(found))
    elif sub == "reconcile":
        return graph_reconcile(args, ctx)
    return OK


def reconcile_manifest(root: Path, roots: list[str]) -> list[dict[str, str]]:
    """Every note under the roots (hidden folders and what `.atlasignore` matches skipped):
    path, hash, and its front matter id when it has one (reconcile finds a moved note by it)."""
    prefixes = [r.strip("/") + "/" if r.strip("/") else "" for r in roots]
    rules = note_rules(root)  # an ignored file is not even named to the server
    files = []
    for p in sorted(root.rglob("*.md")):
        rel = p.relative_to(root).as_posix()
        if any(part.startswith(".") for part in p.relative_to(root).parts):
            continue
        if not any(rel.startswith(prefix) for prefix in prefixes) or not is_note(rel, rules):
            continue
        data = p.read_bytes()
        item = {"path": rel, "hash": memsync.digest(data)}
        found = moves.front_matter_id(data.decode("utf-8", "replace"))
        if found:
            item["id"] = found
        files.append(item)
    return files


def reconcile_text(plan: dict[str, Any]) -> str:
    """The plan as a person reads it: each missing note, what happens to it and why."""
    lines = [f"{c['key']} ({c['path']}): delete: {c.get('why', '')}" for c in plan["candidates"]]
    lines += [
        f"{m['key']} ({m['path']}): move to {m['to']}: {m.get('why', '')}"
        for m in plan.get("moves", [])
    ]
    lines += [f"{k['key']} ({k['path']}): keep: {k.get('why', '')}" for k in plan.get("kept", [])]
    return "\n".join(lines) or "nothing to delete or move"


def graph_reconcile(args: argparse.Namespace, ctx: Context) -> int:
    """Plan (default), then with --apply ask and apply: deletes only notes this machine has
    seen; moves notes found at a new path; --force lifts the mass-deletion guard."""
    roots = args.root or [""]
    body = {
        "project_key": ctx.project.key,
        "roots": roots,
        "files": reconcile_manifest(ctx.project.root, roots),
        "machine_key": config.machine_key(),
        "force": bool(args.force),
    }
    try:
        plan = read(ctx, "POST", "graph/reconcile/plan", body)
    except Failure as exc:
        if "too_many_deletions" in str(exc):
            raise Failure(
                f"{exc} Check the plan, then rerun with --force.", exc.code, exc.data
            ) from None
        raise
    text = reconcile_text(plan)
    names = [c["key"] for c in plan.get("candidates", [])]
    changes = names + [m["key"] for m in plan.get("moves", [])]
    if not args.apply:
        emit(args, plan, text + "\n(plan only; --apply to apply)")
        return OK
    if changes and not args.yes:
        print(text)
        answer = input(f"delete {len(names)} and move {len(changes) - len(names)} entities? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            emit(args, {"applied": False}, "nothing deleted")
            return OK
    receipt = read(
        ctx,
        "POST",
        "graph/reconcile/apply",
        {"plan_id": plan["plan_id"], "manifest_hash": plan["manifest_hash"]},
    )
    emit(
        args,
        receipt,
        f"deleted {len(receipt.get('deleted', []))}, moved {len(receipt.get('moved', []))}; "
        f"restorable until {receipt.get('restorable_until')}",
    )
    return OK


def cmd_spool(args: argparse.Namespace, ctx: Context) -> int:
    spool = ctx.spool
    if args.spool_cmd == "ls":
        states = None if args.all else ("pending", "quarantined", "conflict")
        rows = spool.rows(states, limit=args.limit)
        data = [
            {k: r[k] for k in ("seq", "id", "kind", "state", "status", "attempts", "error")}
            for r in rows
        ]
        lines = [
            f"{r['seq']:>5} {r['id']} {r['kind']:<18} {r['state']:<11} "
            f"{r['status'] or ''} {r['error'] or ''}"
            for r in rows
        ]
        emit(
            args,
            {"operations": data, "counts": spool.counts()},
            "\n".join(lines) or "(spool empty)",
        )
    elif args.spool_cmd == "show":
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


def cmd_hooks(args: argparse.Namespace, ctx: Context | None) -> int:
    from atlas_cli.project import resolve

    root = resolve().root
    path = Path(args.settings) if args.settings else hooks.settings_path(args.scope, root)
    if args.hooks_cmd == "install":
        command = args.hook_command or hooks.default_command(args.scope)
        done = hooks.install(
            path, command=command, profile=args.profile, prompt_recall=args.prompt_recall
        )
    elif args.hooks_cmd == "uninstall":
        done = hooks.uninstall(path)
    else:
        done = {"settings": str(path), "installed": hooks.installed(path)}
    emit(args, done, json.dumps(done, indent=2))
    return OK


# --- hooks --------------------------------------------------------------------------------
def cmd_hook(args: argparse.Namespace) -> int:
    """Run one Claude Code hook: exit 0 always, within the budget; problems on stderr."""
    started = time.monotonic()
    try:
        raw = sys.stdin.read(4_000_000) if not sys.stdin.isatty() else ""
        try:
            event = json.loads(raw) if raw.strip() else {}
        except ValueError:
            print("atlas hook: stdin was not JSON; ignored", file=sys.stderr)
            event = {}
        if not isinstance(event, dict):
            event = {}
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


def _left(started: float, budget: float = HOOK_BUDGET_S) -> float:
    return max(0.0, budget - (time.monotonic() - started))


def _session(event: dict[str, Any]) -> str | None:
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


def hook_session_start(ctx: Context, event: dict[str, Any], started: float) -> None:
    session = _session(event)
    ctx.register_project()
    try:
        heartbeat(ctx, timeout=min(1.5, _left(started)), session=None)
    except (Offline, HttpError) as exc:
        print(f"atlas: heartbeat: {exc}", file=sys.stderr)
    if session:
        start_session(ctx, session)
    online = True
    folder = _memory_dir(ctx)
    try:
        memory_sync(ctx, folder=folder, do_pull=True, budget=_left(started) * 0.5)
    except Failure as exc:
        online = exc.code != OFFLINE
        print(f"atlas: sync-memories: {exc}", file=sys.stderr)
    report = ctx.deliver(_left(started) * 0.6)
    if report.stopped and report.stopped.startswith("offline"):
        online = False
    text = None
    if online:
        try:
            text = brief.compose(ctx, timeout=_left(started), session=session)
        except Exception as exc:
            print(f"atlas: brief: {exc}", file=sys.stderr)
    if text is None:
        text = brief.offline(ctx)
    text = with_conflicts(ctx, text, project_key=ctx.project.key, folder=folder)
    print(
        json.dumps(
            {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}
        )
    )


# What to do about each kind of open memory-file conflict (memsync.Conflict.kind).
CONFLICT_HELP = {
    "edited": (
        "`{path}` was changed here and on {machine}; their version is `{other}`. Merge it "
        "into `{path}` (keep what both say), then delete `{other}`; Atlas sends the merged "
        "file at the next sync."
    ),
    "deleted_there": (
        "`{path}` was deleted on {machine} but changed here (`{other}` says so). To keep it, "
        "delete `{other}`; to accept the deletion, delete `{path}` and `{other}`."
    ),
    "deleted_here": (
        "`{path}` was deleted here but changed on {machine}; their version is `{other}`. To "
        "keep it, rename `{other}` to `{path}`; to confirm the deletion, delete `{other}`."
    ),
    "pending": (
        "`{path}` was changed here and on {machine}; `atlas sync-memories --pull` fetches "
        "their version beside it."
    ),
}


def with_conflicts(ctx: Context, text: str, *, project_key: str, folder: Path) -> str:
    """``text`` (the brief) after the open memory-file conflicts' lines (live or cached, whatever
    follows), said once on stderr too."""
    conflicts = memsync.open_conflicts(ctx.spool, project_key=project_key, folder=folder)
    if not conflicts:
        return text
    names = ", ".join(c.path for c in conflicts)
    print(
        f"atlas: {len(conflicts)} memory-file conflict(s) open ({names}) in {folder}: "
        "the session's brief says how to resolve them",
        file=sys.stderr,
    )
    return "\n".join(conflict_lines(conflicts, folder)) + "\n\n" + text


def conflict_lines(conflicts: list[memsync.Conflict], folder: Path) -> list[str]:
    """The brief's first lines: every open memory-file conflict and what to do about it
    (the model can do it: the files are plain markdown in ``folder``). Empty when none."""
    if not conflicts:
        return []
    return [
        f"## Memory-file conflicts: {len(conflicts)} open (resolve them first)",
        f"In {folder}; until resolved, these files are not synced (the others are):",
        *(
            "- " + CONFLICT_HELP[c.kind].format(path=c.path, other=c.other, machine=c.machine)
            for c in conflicts
        ),
    ]


def hook_post_tool_use(ctx: Context, event: dict[str, Any], started: float) -> None:
    if event.get("tool_name") == "Bash":
        _touched(ctx, event, spool_bash_moves(ctx, event))
        return
    tool_input = event.get("tool_input") or {}
    file_path = tool_input.get("file_path") if isinstance(tool_input, dict) else None
    if not isinstance(file_path, str) or not file_path.endswith(".md"):
        return
    path = Path(file_path)
    if not path.is_absolute():
        path = ctx.project.root / path
    queued = False
    memory_dir = _memory_dir(ctx)
    try:
        path.resolve().relative_to(memory_dir.resolve())
        in_memory_dir = True
    except ValueError:
        in_memory_dir = False
    if in_memory_dir:
        report = memsync.SyncReport()
        memsync.push(
            ctx.spool,
            project_key=ctx.register_project(),
            folder=memory_dir,
            machine_key=config.machine_key(),
            report=report,
        )
        queued = bool(report.pushed)
    elif path.is_file():
        args = entity_args(ctx, path)  # None: not a note (README.md, .atlasignore, ...)
        if args is not None:
            ctx.register_project()
            ctx.spool.add("entity.upsert", args)
            queued = True
    _touched(ctx, event, [str(path)] if queued else [])


def _touched(ctx: Context, event: dict[str, Any], files: list[str]) -> None:
    """After a hook queued writes of ``files``: the session's touch, then a background sync."""
    if not files:
        return
    session = _session(event)
    if session:
        start_session(ctx, session)
        ctx.spool.add(
            "session.touch",
            {
                "session_id": session,
                "turns": 0,
                "writes": 1,
                "files": [project_path(ctx, Path(f))[-500:] for f in files],
            },
        )
    background_sync(ctx.profile.name)


def project_path(ctx: Context, path: Path) -> str:
    """``path`` as the project knows it (relative to its root, on every machine alike); one
    outside the project keeps its name only, never this machine's folders."""
    try:
        return path.resolve().relative_to(ctx.project.root.resolve()).as_posix()
    except ValueError:
        return path.name


def hook_stop(ctx: Context, event: dict[str, Any], started: float) -> None:
    session = _session(event)
    if session:
        start_session(ctx, session)
        ctx.spool.add("session.touch", {"session_id": session, "turns": 1})
        background_sync(ctx.profile.name)


REASONS = {"clear": "clear", "logout": "logout", "prompt_input_exit": "user_exit", "other": "other"}


def hook_session_end(ctx: Context, event: dict[str, Any], started: float) -> None:
    session = _session(event)
    if session:
        start_session(ctx, session)
        reason = REASONS.get(
            str(event.get("reason", "")), "completed" if not event.get("reason") else "other"
        )
        ctx.spool.add("session.end", {"session_id": session, "reason": reason})
    ctx.deliver(_left(started))


def hook_pre_compact(ctx: Context, event: dict[str, Any], started: float) -> None:
    session = _session(event)
    text = checkpoint_text(event)
    if session and text:
        start_session(ctx, session)
        ctx.spool.add("session.checkpoint", {"session_id": session, "text": text})
        background_sync(ctx.profile.name)


def checkpoint_text(event: dict[str, Any]) -> str:
    """A checkpoint from the transcript, without a model: the prompts, the files written and
    the last answer (at most 6,000 characters)."""
    prompts: list[str] = []
    files: list[str] = []
    last = ""
    path = event.get("transcript_path")
    if isinstance(path, str) and Path(path).is_file():
        for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines()[-2000:]:
            try:
                item = json.loads(line)
            except ValueError:
                continue
            message = item.get("message") if isinstance(item, dict) else None
            if not isinstance(message, dict):
                continue
            content = message.get("content")
            blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
            for block in blocks:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "text" and isinstance(block.get("text"), str):
                    if message.get("role") == "user":
                        prompts.append(block["text"][:300])
                    else:
                        last = block["text"][:1500]
                elif block.get("type") == "tool_use":
                    target = (block.get("input") or {}).get("file_path")
                    if target and target not in files:
                        files.append(str(target))
    parts = [f"Checkpoint before compaction ({event.get('trigger', 'auto')})."]
    if prompts:
        parts.append("Asked: " + " | ".join(prompts[-8:]))
    if files:
        parts.append("Files written: " + ", ".join(files[-20:]))
    if last:
        parts.append("Last answer: " + last)
    return "\n".join(parts)[:6000]


def hook_user_prompt_submit(ctx: Context, event: dict[str, Any], started: float) -> None:
    prompt = event.get("prompt")
    if not isinstance(prompt, str) or not strip_private(prompt).strip():
        return  # nothing to recall for (a prompt all private is not sent at all)
    client = Client(ctx.profile, timeout=_left(started, 2.0))
    try:
        query = {
            "query": prompt[:2000],
            "k": 3,
            "project": ctx.project.key,
            "include_unscoped": True,
        }
        found = client.call("POST", client.user_path("recall"), query)
    except (Offline, HttpError) as exc:
        print(f"atlas: recall: {exc}", file=sys.stderr)
        return
    hits = found.get("hits", [])
    if hits:
        print("Atlas recalls:\n" + "\n".join(f"- {str(h.get('text', ''))[:300]}" for h in hits))


HOOKS = {
    "session-start": hook_session_start,
    "post-tool-use": hook_post_tool_use,
    "stop": hook_stop,
    "session-end": hook_session_end,
    "pre-compact": hook_pre_compact,
    "user-prompt-submit": hook_user_prompt_submit,
}


# --- parser -------------------------------------------------------------------------------
def parser(
    prog: str = "atlas",
    *,
    only: str | None = None,
    cls: type[argparse.ArgumentParser] = argparse.ArgumentParser,
) -> argparse.ArgumentParser:
    """The command line's parser; ``only``: with that one command's subparser alone (building
    all 42 took ~65 ms of a ~0.2 s command; the rest of the tree is never read then)."""
    common = common_options()
    p = cls(
        prog=prog,
        description=__doc__,
        parents=[common],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"atlas-cli {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    def add(name: str, **kw: Any) -> argparse.ArgumentParser:
        return sub.add_parser(name, parents=[common], **kw)

    def want(name: str) -> bool:
        return only is None or name == only

    if want("login"):
        s = add("login", help="check a token with the server and save it as a profile")
        s.add_argument("--url", required=True)
        s.add_argument("--user", help="your user id on the server (default: the token's)")
        s.add_argument("--agent", help="the agent the token is bound to (default: the token's)")
        s.add_argument("--token", help="the token ('-' reads it from stdin); stored owner-only")
        s.add_argument("--token-env", help="read the token from this environment variable instead")
        s.add_argument("--default", action="store_true", help="make it the default profile")
        s.add_argument(
            "--no-check", action="store_true", help="save without asking the server (offline setup)"
        )
        s.add_argument(
            "--brief-tokens",
            type=int,
            help="the SessionStart brief's size in estimated tokens for this profile (100-32000; "
            "default: the server's 1500)",
        )
    if want("status"):
        add("status", help="profile, server, project and spool")
    if want("doctor"):
        add("doctor", help="check server, token, agent, project, hooks and spool")

    if want("remember"):
        s = add("remember", help="write a decision or note (spooled)")
        s.add_argument("category", nargs="?", default=None, help="decision, note, ... (a tag)")
        s.add_argument("text", nargs="+")
        s.add_argument("--title")
        s.add_argument("--tag", action="append")
        s.add_argument("--fact-type", choices=["preference", "identity", "constraint", "world"])
        s.add_argument("--supersedes", action="append", help="a memory id this replaces")
    if want("recall"):
        s = add("recall", help="hybrid recall (needs the server)")
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
    if want("forget"):
        s = add("forget", help="forget a memory (or supersede it)")
        s.add_argument("memory_id")
        s.add_argument(
            "--superseded-by", metavar="TEXT", help="write TEXT as the fact replacing it"
        )
    if want("log"):
        s = add("log", help="write a session log line (spooled)")
        s.add_argument("text", nargs="+")
        s.add_argument("--session")
    if want("history"):
        s = add("history", help="recent sessions")
        s.add_argument("--limit", type=int, default=20)

    if want("task"):
        t = add("task", help="tasks").add_subparsers(dest="task_cmd", required=True)
        s = t.add_parser("start", parents=[common])
        s.add_argument("title", nargs="+")
        s.add_argument("--priority", default="normal", choices=["low", "normal", "high", "urgent"])
        s.add_argument("--description")
        for name in ("update", "done", "fail"):
            s = t.add_parser(name, parents=[common])
            s.add_argument("id", type=int)
            if name == "update":
                s.add_argument(
                    "--state",
                    required=True,
                    choices=["in_progress", "blocked", "suspended", "cancelled"],
                )
            s.add_argument("--outcome")
        s = t.add_parser("list", parents=[common])
        s.add_argument("--state")
        s.add_argument("--limit", type=int, default=50)
        t.add_parser("current", parents=[common])

    if want("send"):
        s = add("send", help="message another agent (spooled)")
        s.add_argument("to")
        s.add_argument("body", nargs="+")
        s.add_argument("--subject")
        s.add_argument(
            "--kind", default="note", choices=["note", "question", "answer", "handoff", "alert"]
        )
        s.add_argument("--to-user")
    if want("check"):
        s = add("check", help="unread messages")
        s.add_argument("--all", action="store_true")
        s.add_argument("--limit", type=int, default=20)
    if want("reply"):
        s = add("reply")
        s.add_argument("id", type=int)
        s.add_argument("body", nargs="+")
    if want("ack"):
        s = add("ack")
        s.add_argument("id", type=int)
    if want("heartbeat"):
        add("heartbeat", help="this agent is alive on this machine")
    if want("sync"):
        s = add("sync", help="deliver the spool")
        s.add_argument("--budget", type=float, default=60.0, help="seconds at most (60)")
        s.add_argument("--batch-size", type=int, default=100, help=argparse.SUPPRESS)
        s.add_argument("--quiet", action="store_true")
        s.add_argument("--background", action="store_true", help=argparse.SUPPRESS)
    if want("sync-memories"):
        s = add("sync-memories", help="push memory files; --pull brings other machines' changes")
        s.add_argument("--pull", action="store_true")
        s.add_argument(
            "--dir", help="the folder (default: Claude Code's auto-memory of the project)"
        )
        s.add_argument("--force", action="store_true", help=argparse.SUPPRESS)
        s.add_argument("--budget", type=float, default=30.0)

    if want("entity"):
        e = add("entity", help="index markdown files as entities").add_subparsers(
            dest="entity_cmd", required=True
        )
        s = e.add_parser("index-file", parents=[common])
        s.add_argument("path")
        s = e.add_parser("index-all", parents=[common])
        s.add_argument("--root")
    if want("graph"):
        g = add("graph", help="the knowledge graph").add_subparsers(dest="graph_cmd", required=True)
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
        s = g.add_parser("reconcile", parents=[common])
        s.add_argument("--root", action="append")
        s.add_argument("--apply", action="store_true", help="apply the plan (asks unless --yes)")
        s.add_argument("--yes", action="store_true")
        s.add_argument(
            "--force",
            action="store_true",
            help="lift the mass-deletion guard (more than 20, or 10%% of the notes under the "
            "roots)",
        )

    if want("spool"):
        sp = add("spool", help="the offline spool").add_subparsers(dest="spool_cmd", required=True)
        s = sp.add_parser("ls", parents=[common])
        s.add_argument("--all", action="store_true")
        s.add_argument("--limit", type=int, default=200)
        s = sp.add_parser("show", parents=[common])
        s.add_argument("id")
        s = sp.add_parser("retry", parents=[common])
        s.add_argument("id", nargs="?")
        s = sp.add_parser("drop", parents=[common])
        s.add_argument("id")
        s.add_argument("--yes", action="store_true")

    if want("hooks"):
        h = add("hooks", help="Claude Code hooks").add_subparsers(dest="hooks_cmd", required=True)
        for name in ("install", "uninstall", "status"):
            s = h.add_parser(name, parents=[common])
            s.add_argument("--scope", choices=["user", "project"], default="user")
            s.add_argument("--settings", help="this settings.json instead")
            if name == "install":
                s.add_argument(
                    "--command",
                    dest="hook_command",
                    help="how the hook runs atlas (default: this atlas)",
                )
                s.add_argument(
                    "--prompt-recall", action="store_true", help="also UserPromptSubmit recall"
                )
    if want("hook"):
        s = add("hook", help=argparse.SUPPRESS)
        s.add_argument("name", choices=sorted(HOOKS))
        s.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    return p


COMMANDS = {
    "status": cmd_status,
    "doctor": cmd_doctor,
    "remember": cmd_remember,
    "recall": cmd_recall,
    "forget": cmd_forget,
    "log": cmd_log,
    "history": cmd_history,
    "task": cmd_task,
    "send": cmd_send,
    "check": cmd_check,
    "reply": cmd_reply,
    "ack": cmd_ack,
    "heartbeat": cmd_heartbeat,
    "sync": cmd_sync,
    "sync-memories": cmd_sync_memories,
    "entity": cmd_entity,
    "graph": cmd_graph,
    "spool": cmd_spool,
}
# Every command the parser knows (COMMANDS, and those main runs itself).
COMMAND_NAMES = frozenset([*COMMANDS, "login", "hooks", "hook"])


def common_options() -> argparse.ArgumentParser:
    """The options every command takes, before or after its name. Their defaults are
    SUPPRESS: argparse shares these action objects between the parsers, and a subcommand's
    default would overwrite what was given before it (`atlas --profile X status` ran as the
    default profile). ``parse`` fills the defaults in once, after parsing."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="print one JSON document"
    )
    common.add_argument("--profile", default=argparse.SUPPRESS, help="the profile to use")
    common.add_argument(
        "--timeout", type=float, default=argparse.SUPPRESS, help="seconds per server call (10)"
    )
    return common


COMMON_DEFAULTS: dict[str, Any] = {"json": False, "profile": None, "timeout": 10.0}


class _Retry(Exception):
    """The one-command parser met something it does not handle alone."""


class _OneCommandParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _Retry(message)


def command_named(argv: list[str]) -> str | None:
    """The command ``argv`` names when only common options (spelled in full) come before it;
    None otherwise (help, ``--version``, an abbreviation, a typo: the whole tree decides)."""
    rest = iter(argv)
    for word in rest:
        if word == "--json" or word.startswith(("--profile=", "--timeout=")):
            continue
        if word in ("--profile", "--timeout"):
            next(rest, None)
            continue
        return word if word in COMMAND_NAMES else None
    return None


def parse(argv: list[str] | None, prog: str = "atlas") -> argparse.Namespace:
    """The arguments, the common options wherever they were given (after the command wins).
    The parser holds the named command's subparser alone; anything that one refuses is
    parsed again by the whole tree, so every error and help text reads as before."""
    argv = list(sys.argv[1:] if argv is None else argv)
    name = command_named(argv)
    args = None
    if name is not None:
        with contextlib.suppress(_Retry):
            args = parser(prog, only=name, cls=_OneCommandParser).parse_args(argv)
    if args is None:
        args = parser(prog).parse_args(argv)
    for name, default in COMMON_DEFAULTS.items():
        if not hasattr(args, name):
            setattr(args, name, default)
    return args


def main(argv: list[str] | None = None, prog: str = "atlas") -> int:
    args = parse(argv, prog)
    if args.command == "hook":
        return cmd_hook(args)
    try:
        if args.command == "login":
            return cmd_login(args)
        if args.command == "hooks":
            return cmd_hooks(args, None)
        ctx = Context(config.profile(args.profile), timeout=args.timeout)
        if not ctx.profile.token:
            raise Failure(
                f"profile {ctx.profile.name} has no token: "
                "`atlas login --token ...` or set ATLAS_TOKEN",
                AUTH,
            )
        try:
            return COMMANDS[args.command](args, ctx)
        finally:
            ctx.close()
    except Failure as exc:
        if getattr(args, "json", False):
            print(
                json.dumps({"error": str(exc), "exit": exc.code, "details": exc.data}, default=str)
            )
        print(f"atlas: {exc}", file=sys.stderr)
        return exc.code
    except SpoolError as exc:
        print(f"atlas: {exc}", file=sys.stderr)
        return SPOOL
    except config.ConfigError as exc:
        print(f"atlas: {exc}", file=sys.stderr)
        return AUTH
    except (ValueError, OSError) as exc:
        print(f"atlas: {exc}", file=sys.stderr)
        return ERROR


def bridge_main(argv: list[str] | None = None) -> int:
    """``bridge``: the source design's spelling; its verbs and flags are atlas's, and
    ``bridge entity search`` is ``atlas graph search``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:2] == ["entity", "search"]:
        argv = ["graph", "search", *argv[2:]]
    return main(argv, prog="bridge")


if __name__ == "__main__":
    raise SystemExit(main())
