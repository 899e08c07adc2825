"""Memories an agent writes are plain Atlas memories: recall finds them for their user only,
and forget removes them."""

from __future__ import annotations

import pytest

from agents.services.notes import agent_memory_write
from agents.services.sessions import session_start
from atlas_platform.exceptions import NotFound, ValidationError
from memory.selectors import memory_get
from memory.services.recall import memory_recall
from memory.services.writes import memory_forget

pytestmark = pytest.mark.django_db


def test_an_agents_note_is_recalled_for_its_user_and_forgotten_on_request(
    alice_agent, bob, es_store
):
    session_start(agent=alice_agent, session_id="s1")
    note = agent_memory_write(
        agent=alice_agent,
        text="The billing service deploys from the release branch",
        session_id="s1",
    )

    mine = memory_recall(user=alice_agent.user, query="where does billing deploy from?", k=3)
    theirs = memory_recall(user=bob, query="where does billing deploy from?", k=3)
    memory_forget(user=alice_agent.user, memory_id=note.id)

    assert [h.doc.id for h in mine.hits][:1] == [note.id]
    assert note.id not in [h.doc.id for h in theirs.hits]
    with pytest.raises(NotFound):
        memory_get(user=alice_agent.user, memory_id=note.id)


def test_a_note_naming_another_agents_session_or_a_bad_text_writes_nothing(
    alice_agent, alice_codex, es_store
):
    session_start(agent=alice_codex, session_id="codex-s")

    with pytest.raises(NotFound):
        agent_memory_write(agent=alice_agent, text="x", session_id="codex-s")
    with pytest.raises(ValidationError):
        agent_memory_write(agent=alice_agent, text="   ")

    assert memory_recall(user=alice_agent.user, query="x", k=5).hits == []
