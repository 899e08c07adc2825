"""The Atlas MCP server (official ``mcp`` SDK, ``MCPServer``): the memory tools and their hints."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

from memory.mcp import tools

INSTRUCTIONS = """\
Atlas is this user's long-term memory, kept across conversations.
- Each time the user writes, call record_turn with their message verbatim before answering;
  it returns related memories. Use recall_memory for anything else you need to look up.
- Store durable facts and playbooks with write_memory. When new information makes a stored fact
  false, write the new fact with `supersedes` set to the old fact's id (found by recall).
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
    "memory_history": ToolAnnotations(
        title="Supersession history", read_only_hint=True, open_world_hint=False
    ),
}


# An app above memory offers its own tools (e.g. agents: tasks, messages, sessions): each a
# function following tools.py's conventions, with its annotations. The composition root
# (atlas_server/asgi.py) passes them in; memory never imports those apps.
ExtraTools = Sequence[tuple[Callable[..., Awaitable[Any]], ToolAnnotations]]


def build_server(extra: ExtraTools = ()) -> MCPServer:
    """A server with the memory tools and any ``extra`` ones; descriptions come from the
    tools' docstrings."""
    server: MCPServer = MCPServer("atlas", instructions=INSTRUCTIONS)
    offered = [*((fn, _HINTS[fn.__name__]) for fn in tools.TOOLS), *extra]
    for fn, hints in offered:
        server.add_tool(
            fn,
            description=inspect.cleandoc(fn.__doc__ or ""),
            annotations=hints,
            structured_output=False,
        )
    return server
