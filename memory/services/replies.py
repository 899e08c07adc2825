"""The assistant's side of a conversation: what it answered, kept as an episode beside the
user's turns (``source="assistant"``), so "what did you suggest last time?" has an answer.

It is written by the same path as a turn (``writes.episode_record``: session, lexical context,
store, audit); what differs is after it: a reply is recalled like a turn but never recalled
*on* (no recall runs after it) and never counts toward consolidation (no
``episode_recorded``), so an assistant's words are not taken for facts about the user.
"""

from __future__ import annotations

from datetime import datetime

from memory.engine.types import MemoryDoc
from memory.services.writes import episode_record
from tenants.models import User

ASSISTANT = "assistant"


def memory_reply_record(
    *,
    user: User,
    text: str,
    session_id: str | None = None,
    agent: str | None = None,
    timestamp: datetime | None = None,
) -> MemoryDoc:
    """Store the assistant's verbatim answer to the user as an episode (source
    ``assistant``); audited without its text."""
    return episode_record(
        user=user,
        text=text,
        source=ASSISTANT,
        action="memory.reply",
        session_id=session_id,
        agent=agent,
        timestamp=timestamp,
    )
