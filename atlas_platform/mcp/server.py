"""The Atlas MCP server (official ``mcp`` SDK, ``MCPServer``) built from every app's tools.

Each app offers its tools as functions following memory/mcp/tools.py's conventions, with their
annotations; the composition root (atlas_server/asgi.py) passes them all to ``build_server``,
so the platform never imports an app."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from importlib import metadata
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, InputRequiredResult, ToolAnnotations
from pydantic import ValidationError

from atlas_platform.mcp import results

Tools = Sequence[tuple[Callable[..., Awaitable[Any]], ToolAnnotations]]
UNSERVED = (
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/read",
    "resources/templates/list",
)


def _version() -> str:
    try:
        return metadata.version("atlas")
    except metadata.PackageNotFoundError:  # a source tree that was never installed
        return "0+unknown"


class AtlasServer(MCPServer):
    """``MCPServer`` whose argument errors read like the tools' own domain errors;
    ``recall_tools`` count against the token's recall rate limit."""

    recall_tools: frozenset[str] = frozenset()

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc, UnexpectedToolError):
                raise
            if isinstance(exc.__cause__, ValidationError):
                return results.invalid_arguments(exc.__cause__.errors())
            if self._tool_manager.get_tool(name) is None:
                return results.unknown_tool(name)
            raise


def tool_rate_scope(server: MCPServer, name: str) -> str:
    """The REST rate-limit scope a tool call counts against: ``recall`` for a recall tool,
    ``read`` for a read-only tool, ``write`` for any other (an unknown name too)."""
    if name in getattr(server, "recall_tools", ()):
        return "recall"
    tool = server._tool_manager.get_tool(name)
    hints = tool.annotations if tool is not None else None
    return "read" if hints is not None and hints.read_only_hint else "write"


def build_server(
    *, instructions: str, tools: Tools, recall_tools: frozenset[str] = frozenset()
) -> MCPServer:
    """A server with ``tools``; descriptions come from the tools' docstrings."""
    server = AtlasServer("atlas", instructions=instructions, version=_version())
    server.recall_tools = recall_tools
    # Atlas has tools only: leave prompts and resources unserved, so the handshake does not
    # advertise capabilities that would answer empty lists (the SDK registers them always).
    handlers = server._lowlevel_server._request_handlers
    for method in UNSERVED:
        handlers.pop(method, None)
    for fn, hints in tools:
        server.add_tool(
            fn,
            description=inspect.cleandoc(fn.__doc__ or ""),
            annotations=hints,
            structured_output=False,
        )
    return server
