"""``atlas heartbeat``: this agent is alive on this machine (never spooled: an old heartbeat
says nothing). SessionStart sends one too."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from atlas_cli import __version__, config
from atlas_cli.api import HttpError, Offline
from atlas_cli.core import AUTH, OK, REFUSED, Command, Context, Failure
from atlas_cli.output import emit

if TYPE_CHECKING:
    from atlas_cli.parser import Subcommands


def arguments(commands: Subcommands) -> None:
    commands.add("heartbeat", help="this agent is alive on this machine")


def heartbeat(ctx: Context, *, timeout: float, session: str | None = None) -> dict[str, Any]:
    """Say so to the server (``Offline`` or ``HttpError`` when it cannot hear it); the
    machine is known to the server from then on."""
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


def heartbeat_command(args: argparse.Namespace, ctx: Context) -> int:
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


COMMANDS: dict[str, Command] = {"heartbeat": heartbeat_command}
