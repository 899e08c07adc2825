"""The token a profile holds, as the server sees it (``GET /api/v1/token``): what ``login``
checks before it saves a profile and what ``doctor`` checks later. Only a user token bound to
an agent can do an agent's work (sessions, tasks, messages, the spool's replay); anything else
is refused here, with the way to get the right one, instead of failing 403 at every sync."""

from __future__ import annotations

from typing import Any

from atlas_cli.api import Client, HttpError, Offline
from atlas_cli.config import Profile
from atlas_cli.core import AUTH, OFFLINE, Failure

GET_ONE = (
    "get a token bound to an agent, one per machine: in the admin, Users > {user} > "
    "'Issue an agent-bound token'; or `POST /api/v1/users/{user}/agents/{agent}/tokens` "
    '{{"machine": "<this machine>"}} with a provisioning token (docs/cli.md, "Get a token")'
)


def how_to_get_one(user: str | None, agent: str | None) -> str:
    return GET_ONE.format(user=user or "<you>", agent=agent or "claude-code")


def token_info(client: Client, *, timeout: float) -> dict[str, Any]:
    """Who the token is (tenant, user, agent); ``Failure`` when the server says no or is away."""
    try:
        found = client.call("GET", "token", timeout=timeout)
    except Offline as exc:
        raise Failure(f"cannot check the token: {exc}", OFFLINE) from None
    except HttpError as exc:
        if exc.status in (401, 403):
            raise Failure(
                f"the server refused the token ({exc.code}: {exc.message})", AUTH
            ) from None
        where = f"{client.profile.url}/api/v1/token"  # a 404: is the URL the Atlas server?
        code = OFFLINE if exc.status >= 500 else AUTH
        raise Failure(f"cannot check the token at {where}: {exc}", code) from None
    return found if isinstance(found, dict) else {}


def bound_problem(info: dict[str, Any], *, user: str | None, agent: str | None) -> str | None:
    """Why this token cannot work for ``user`` as ``agent`` (None: it can)."""
    owner, bound = info.get("user"), info.get("agent")
    if not owner:
        return "this is a tenant-wide token, not one user's token bound to an agent"
    if user and owner != user:
        return f"this token acts for user {owner!r}, not {user!r}"
    if not bound:
        return f"this token of user {owner!r} is not bound to an agent"
    if agent and bound != agent:
        return f"this token is bound to agent {bound!r}, not {agent!r}"
    return None


def verify(
    *, url: str, token: str, user: str | None, agent: str | None, timeout: float
) -> tuple[str, str]:
    """The (user, agent) a token acts as, after the server confirmed it; ``Failure`` (exit 4,
    or 3 when the server is away) with the way to get a right one otherwise."""
    probe = Profile(name="-", url=url.rstrip("/"), user="", agent="", token=token, token_source="")
    info = token_info(Client(probe), timeout=timeout)
    problem = bound_problem(info, user=user, agent=agent)
    if problem is not None:
        raise Failure(f"{problem}; {how_to_get_one(user or info.get('user'), agent)}", AUTH, info)
    return str(info["user"]), str(info["agent"])
