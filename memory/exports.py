"""memory's sections of the user export (``tenants.exports``): every personal memory, and the
session cursors (which conversation session the user's turns from each agent are in)."""

from __future__ import annotations

from rest_framework import serializers

from memory.api.serializers import MemoryOut
from memory.models import SessionCursor
from memory.selectors import memory_export, session_cursors_export
from tenants.exports import register_export


class SessionCursorOut(serializers.Serializer[SessionCursor]):
    agent = serializers.CharField(help_text='The agent that sent the turns ("" for none).')
    session_id = serializers.CharField(help_text="The session its next turns join.")
    inferred = serializers.BooleanField(
        help_text="Whether Atlas opened the session (turns sent without a session_id)."
    )
    last_turn_at = serializers.DateTimeField(help_text="The time of its newest live turn.")


def register() -> None:
    register_export(
        "memories",
        rows=lambda user: memory_export(user=user),
        shape=MemoryOut,
        help_text="Every personal memory (episodes, facts, playbooks), superseded facts too, "
        "oldest first.",
    )
    register_export(
        "session_cursors",
        rows=lambda user: session_cursors_export(user=user),
        shape=SessionCursorOut,
        help_text="The conversation session each agent's next turn joins (one per agent).",
    )
