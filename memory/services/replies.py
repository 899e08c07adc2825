"""The assistant's side of a conversation: what it answered, kept as an episode beside the
user's turns (``source="assistant"``), so "what did you suggest last time?" has an answer.

Apart from ``writes.py`` on purpose: a reply is recalled like a turn but never recalled *on*
(no recall runs after it) and never counts toward consolidation (no ``episode_recorded``), so
an assistant's words are not taken for facts about the user.
"""

from __future__ import annotations

from datetime import datetime

from memory.engine.types import MemoryDoc
from memory.services.common import backend, clean_text, store_errors
from memory.services.turn_context import link_following, with_live_context
from memory.services.writes import _audit, _personal_doc, _store
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
    text = clean_text(text)
    with store_errors():
        episode = _personal_doc(
            user,
            "episodic",
            text,
            source=ASSISTANT,
            session_id=session_id,
            agent=agent,
            timestamp=timestamp,
        )
        # Intent first, create-only: the same path as every write.
        episode, previous = with_live_context(episode)
        episode = _store(episode)
        link_following(previous, episode)
    _audit(
        user,
        "memory.reply",
        episode,
        undo=lambda: backend().delete(episode),
        session_id=session_id,
    )
    return episode
