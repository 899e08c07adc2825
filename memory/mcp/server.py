"""memory's part of the Atlas MCP server: its tools with their hints, the server's instructions
and the tools that count as recalls (``atlas_platform.mcp.server.build_server`` serves them,
beside the other apps' tools, from the composition root: atlas_server/asgi.py)."""

from __future__ import annotations

from mcp.types import ToolAnnotations

from atlas_platform.mcp.server import Tools
from memory.mcp import tools

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


RECALL_TOOLS = frozenset({"recall_memory"})  # counted against the token's recall rate limit


def memory_tools() -> Tools:
    """memory's tools with their annotations."""
    return [(fn, _HINTS[fn.__name__]) for fn in tools.TOOLS]
