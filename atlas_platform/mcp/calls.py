"""How an MCP tool calls a service: for the request's user, in a worker thread, as the token's
actor, with domain errors as tool errors. Every app's tools (memory's, agents', knowledge's) go
through ``call``."""

import logging
from collections.abc import Callable
from typing import Any

from asgiref.sync import sync_to_async
from django.db import close_old_connections
from mcp.server.mcpserver import Context
from mcp.types import CallToolResult

from atlas_platform.callers import callers
from atlas_platform.context import acting_as, request_id
from atlas_platform.exceptions import AtlasError
from atlas_platform.mcp.auth import IDENTITY_SCOPE_KEY, McpIdentity
from atlas_platform.mcp.results import failure, internal_failure, success

logger = logging.getLogger(__name__)


def identity_of(ctx: Context) -> McpIdentity:
    """The identity ``BearerAuth`` attached to this HTTP request."""
    request = ctx.request_context.request
    identity = getattr(request, "scope", {}).get(IDENTITY_SCOPE_KEY)
    if not isinstance(identity, McpIdentity):  # only reachable if the app is mis-wired
        raise RuntimeError("MCP request reached a tool without authentication.")
    return identity


def _user(identity: McpIdentity, provisions: bool) -> Any:
    """The request's user. One who does not exist yet (``McpIdentity.user`` is None) is
    provisioned by a tool that ``provisions`` (the first turn, as on REST); any other tool
    gets the ``user_not_found`` the connection would have had without auto-provisioning (or
    the user, when a concurrent first turn made them meanwhile)."""
    if identity.user is not None:
        return identity.user
    return callers().subject(
        token=identity.token, external_id=identity.external_id, provisions=provisions
    )


def _in_request(
    service: Callable[..., Any],
    shape: Callable[[Any], dict[str, Any]],
    identity: McpIdentity,
    provisions: bool,
    kwargs: dict[str, Any],
) -> dict[str, Any]:
    """Run a service for the request's user the way Django runs a request: fresh or healthy
    DB connections. Its result is shaped here too: a shape may read a related row (a
    message's recipient's user), which the event loop's thread may not."""
    close_old_connections()
    try:
        return shape(service(user=_user(identity, provisions), **kwargs))
    finally:
        close_old_connections()


async def call(
    ctx: Context,
    service: Callable[..., Any],
    shape: Callable[[Any], dict[str, Any]],
    provisions: bool = False,
    **kwargs: Any,
) -> CallToolResult:
    """Call ``service`` for the request's user in a worker thread, as the token's actor;
    domain errors come back as tool errors. ``provisions``: the tool may create a user who does
    not exist yet where the tenant and token allow it (``record_turn`` only, mirroring REST's
    turn endpoint); the creation is audited as the token's, like REST's.

    Not ``thread_sensitive``: outside Django's own request handling that would run every tool
    call of the process on one shared thread, one after the other. A service holds no state in
    its thread between calls (``_in_request`` gives it a healthy connection and closes it), so
    concurrent calls may run in parallel, as Django's requests do."""
    identity = identity_of(ctx)
    run = sync_to_async(_in_request, thread_sensitive=False)
    with acting_as(identity.actor), request_id(identity.request_id):
        try:
            data = await run(service, shape, identity, provisions, kwargs)
        except AtlasError as exc:
            return failure(exc)
        except Exception:
            # The traceback goes to the log; the model sees a fixed sentence and the request id.
            logger.exception("MCP tool %s failed", getattr(service, "__name__", service))
            return internal_failure()
        return success(data)
