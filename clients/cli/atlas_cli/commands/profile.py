"""This machine's set-up: ``login`` (a profile, its token checked with the server),
``status`` (profile, server, project, spool, conflicts) and ``doctor`` (each check, ok or
not)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from atlas_cli import account, config, memsync
from atlas_cli.api import HttpError, Offline
from atlas_cli.core import AUTH, ERROR, OK, USAGE, Command, Context, Failure
from atlas_cli.hooks import settings
from atlas_cli.output import emit
from atlas_cli.project import memory_dir

if TYPE_CHECKING:
    from atlas_cli.parser import Subcommands


def arguments(commands: Subcommands) -> None:
    if s := commands.add("login", help="check a token with the server and save it as a profile"):
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
    commands.add("status", help="profile, server, project and spool")
    commands.add("doctor", help="check server, token, agent, project, hooks and spool")


def login(args: argparse.Namespace) -> int:
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


def status(args: argparse.Namespace, ctx: Context) -> int:
    counts = ctx.spool.counts()
    conflicts = memsync.open_conflicts(
        ctx.spool, project_key=ctx.project.key, folder=memory_dir(ctx.project.root)
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
            f" ({', '.join(c.path for c in conflicts)}: see `atlas memory-files`)"
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


def doctor(args: argparse.Namespace, ctx: Context) -> int:
    checks: list[dict[str, Any]] = []

    def check(name: str, ok: bool, detail: str) -> None:
        checks.append({"check": name, "ok": ok, "detail": detail})

    check("token", bool(ctx.profile.token), f"from {ctx.profile.token_source}")
    for name, ok, detail in server_checks(ctx):
        check(name, ok, detail)
    check("project", True, f"{ctx.project.root} -> {ctx.project.key[:12]}")
    places = [
        settings.settings_path("user", ctx.project.root),
        settings.settings_path("project", ctx.project.root),
    ]
    found = {str(p): settings.installed(p) for p in places}
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


COMMANDS: dict[str, Command] = {"status": status, "doctor": doctor}
