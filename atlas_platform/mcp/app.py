"""The platform's ASGI application: MCP endpoints in front of Django (the MCP host every app's
tools are served by; the composition root builds the server from them).

``/mcp`` and ``/api/atlas/mcp/<user_id>`` go through ``BearerAuth`` to the MCP SDK's streamable
HTTP session manager; every other path (admin, REST, static files) goes to Django. The lifespan
runs the session manager, fresh for each lifespan (one per worker process).

The MCP transport is stateless with JSON responses: every POST stands alone, so any worker of a
multi-worker deployment can answer any request (no sticky sessions), and authentication happens
on each request anyway. The tools never call back into the client, so nothing needs a session.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.routing import Router
from starlette.types import Receive, Scope, Send

from atlas_platform.exceptions import Unavailable
from atlas_platform.mcp.auth import BearerAuth
from atlas_platform.mcp.server import tool_rate_scope

# Django's ASGIHandler, typed loosely: its stubs' signature is narrower than Starlette's ASGIApp.
DjangoASGI = Callable[[Any, Any, Any], Awaitable[None]]
OWN_USER_PATH = re.compile(r"^/mcp/?$")
NAMED_USER_PATH = re.compile(r"^/api/atlas/mcp/(?P<user_id>[^/]+)/?$")


class EndpointStarting(Unavailable):
    """A request came before the lifespan started the session manager (or after it ended)."""

    code = "starting"
    public_message = "The MCP endpoint is not running yet. Retry shortly."


def mcp_route(path: str) -> tuple[bool, str | None]:
    """(is an MCP path, the user id it names: None for ``/mcp/``)."""
    if OWN_USER_PATH.match(path):
        return True, None
    named = NAMED_USER_PATH.match(path)
    return (True, named.group("user_id")) if named else (False, None)


class McpEndpoint:
    """The MCP server behind a session manager that lives as long as the ASGI lifespan."""

    def __init__(self, server: MCPServer) -> None:
        self.server = server
        self._manager: StreamableHTTPSessionManager | None = None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        # A session manager runs once; each lifespan (a worker, a test server) builds its own.
        # Host checks are BearerAuth's (Django's ALLOWED_HOSTS), so the SDK's own are off.
        self.server.streamable_http_app(
            stateless_http=True,
            json_response=True,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        manager = self.server.session_manager
        async with manager.run():
            self._manager = manager
            try:
                yield
            finally:
                self._manager = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._manager is None:
            raise EndpointStarting("The MCP session manager is not running.")
        await self._manager.handle_request(scope, receive, send)


class PlatformApp:
    """Route MCP paths to the authenticated MCP endpoint, everything else to Django."""

    def __init__(self, django_app: DjangoASGI, endpoint: McpEndpoint) -> None:
        self.django_app = django_app
        self.endpoint = endpoint
        self.auth = BearerAuth(
            endpoint, rate_scope=lambda name: tool_rate_scope(endpoint.server, name)
        )
        self._lifespan = Router(lifespan=self._running)

    @contextlib.asynccontextmanager
    async def _running(self, _app: Any) -> AsyncIterator[None]:
        async with self.endpoint.running():
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(scope, receive, send)
            return
        is_mcp, user_id = mcp_route(scope["path"]) if scope["type"] == "http" else (False, None)
        if is_mcp:
            await self.auth(scope, receive, send, external_id=user_id)
        else:
            await self.django_app(scope, receive, send)


def platform_app(django_app: DjangoASGI, server: MCPServer) -> PlatformApp:
    """Django's ASGI app with the MCP ``server`` (``server.build_server``) in front of it."""
    return PlatformApp(django_app, McpEndpoint(server))
