"""The Atlas MCP server (official ``mcp`` SDK, ``MCPServer``): the memory tools and their hints."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from importlib import metadata
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.types import CallToolResult, InputRequiredResult, ToolAnnotations
from pydantic import ValidationError

from memory.mcp import results, tools

INSTRUCTIONS = """\
Atlas is this user's long-term memory, kept across conversations.
- Each time the user writes, call record_turn with their message verbatim before answering;
  it returns related memories. Use recall_memory for anything else you need to look up.
- Store durable facts and playbooks with write_memory. When new information makes a stored fact
  false, write the new fact with `supersedes` set to the old fact's id (found by recall).
- After answering, call record_reply with your answer, so later you can say what you suggested.
- When you followed a playbook, report with record_playbook_outcome whether it worked.
- For "what do you know about me?", call about_me.
- forget_memory deletes for good: only when the user explicitly asks to forget something.
"""

_HINTS = {
    "recall_memory": ToolAnnotations(
        title="Recall memories", read_only_hint=True, open_world_hint=False
    ),
    "write_memory": ToolAnnotations(
        title="Write a fact or playbook", destructive_hint=False, idempotent_hint=False
    ),
    "forget_memory": ToolAnnotations(
        title="Forget a memory", destructive_hint=True, idempotent_hint=False
    ),
    "record_turn": ToolAnnotations(
        title="Record the user's message", destructive_hint=False, idempotent_hint=False
    ),
    "record_reply": ToolAnnotations(
        title="Record your answer", destructive_hint=False, idempotent_hint=False
    ),
    "record_playbook_outcome": ToolAnnotations(
        title="Report a playbook's outcome", destructive_hint=False, idempotent_hint=False
    ),
    "about_me": ToolAnnotations(
        title="What Atlas knows about the user", read_only_hint=True, open_world_hint=False
    ),
    "memory_history": ToolAnnotations(
        title="Supersession history", read_only_hint=True, open_world_hint=False
    ),
}


# An app above memory offers its own tools (e.g. agents: tasks, messages, sessions): each a
# function following tools.py's conventions, with its annotations. The composition root
# (atlas_server/asgi.py) passes them in; memory never imports those apps.
ExtraTools = Sequence[tuple[Callable[..., Awaitable[Any]], ToolAnnotations]]


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
    """``MCPServer`` whose argument errors read like the tools' own domain errors."""

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


RECALL_TOOLS = frozenset({"recall_memory"})


def tool_rate_scope(server: MCPServer, name: str) -> str:
    """The REST rate-limit scope a tool call counts against: ``recall`` for recall, ``read``
    for a read-only tool, ``write`` for any other (an unknown name too)."""
    if name in RECALL_TOOLS:
        return "recall"
    tool = server._tool_manager.get_tool(name)
    hints = tool.annotations if tool is not None else None
    return "read" if hints is not None and hints.read_only_hint else "write"


def build_server(extra: ExtraTools = ()) -> MCPServer:
    """A server with the memory tools and any ``extra`` ones; descriptions come from the
    tools' docstrings."""
    server: MCPServer = AtlasServer("atlas", instructions=INSTRUCTIONS, version=_version())
    # Atlas has tools only: leave prompts and resources unserved, so the handshake does not
    # advertise capabilities that would answer empty lists (the SDK registers them always).
    handlers = server._lowlevel_server._request_handlers
    for method in UNSERVED:
        handlers.pop(method, None)
    offered = [*((fn, _HINTS[fn.__name__]) for fn in tools.TOOLS), *extra]
    for fn, hints in offered:
        server.add_tool(
            fn,
            description=inspect.cleandoc(fn.__doc__ or ""),
            annotations=hints,
            structured_output=False,
        )
    return server
