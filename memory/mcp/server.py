"""The Atlas MCP server (official ``mcp`` SDK, ``MCPServer``): the memory tools and their hints."""

from __future__ import annotations

import inspect

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


def build_server() -> MCPServer:
    """A server with the five memory tools; descriptions come from the tools' docstrings."""
    server: MCPServer = MCPServer("atlas", instructions=INSTRUCTIONS)
    for fn in tools.TOOLS:
        server.add_tool(
            fn,
            description=inspect.cleandoc(fn.__doc__ or ""),
            annotations=_HINTS[fn.__name__],
            structured_output=False,
        )
    return server
