"""Sessions: idempotent start, counters in place (never a row per turn), capped files, end."""

from __future__ import annotations

import pytest
from django.apps import apps

from agents.models import Session
from agents.services.sessions import session_end, session_start, session_touch
from atlas_platform.exceptions import Conflict, NotFound, ValidationError
from memory.selectors import memory_counts, memory_get
from tenants.models import AuditEvent
from tests.agents.conftest import register

pytestmark = pytest.mark.django_db


def row_counts() -> dict[str, int]:
    """Rows of every model of the project (audit included)."""
    return {m._meta.label: m._default_manager.count() for m in apps.get_models()}


def test_a_start_hook_firing_twice_starts_one_session(alice_agent):
    first = session_start(agent=alice_agent, session_id="sess-1")
    again = session_start(agent=alice_agent, session_id="sess-1")

    assert first.created and not again.created
    assert again.session.pk == first.session.pk
    assert Session.objects.count() == 1


def test_two_agents_may_use_the_same_session_id(alice_agent, alice_codex):
    session_start(agent=alice_agent, session_id="same")
    session_start(agent=alice_codex, session_id="same")

    assert Session.objects.count() == 2


def test_a_hook_firing_100_times_counts_100_turns_and_writes_nothing_else(alice_agent, es_store):
    session_start(agent=alice_agent, session_id="sess-1")
    before = row_counts()

    for _ in range(100):
        session_touch(agent=alice_agent, session_id="sess-1")

    session = Session.objects.get()
    assert session.turns == 100 and session.writes == 0
    assert row_counts() == before  # no row per turn, no audit row per turn
    assert sum(memory_counts(user=alice_agent.user).values()) == 0  # and no document


def test_files_touched_are_kept_once_each_up_to_the_cap(alice_agent, settings):
    settings.ATLAS_SESSION_MAX_FILES = 3
    session_start(agent=alice_agent, session_id="s")

    session_touch(agent=alice_agent, session_id="s", files=["a.py", "b.py", "a.py"])
    session = session_touch(agent=alice_agent, session_id="s", writes=2, files=["c.py", "d.py"])

    assert session.files_touched == ["a.py", "b.py", "c.py"]
    assert session.turns == 2 and session.writes == 2


def test_an_ended_session_takes_no_more_turns_and_ending_again_is_a_no_op(alice_agent):
    session_start(agent=alice_agent, session_id="s")
    ended = session_end(agent=alice_agent, session_id="s", reason="user_exit")
    events = AuditEvent.objects.filter(action="session.end").count()

    again = session_end(agent=alice_agent, session_id="s", reason="error")
    with pytest.raises(Conflict) as refused:
        session_touch(agent=alice_agent, session_id="s")

    assert again.ended_at == ended.ended_at and again.end_reason == "user_exit"
    assert AuditEvent.objects.filter(action="session.end").count() == events == 1
    assert refused.value.code == "session_ended"


def test_bad_input_changes_nothing(alice_agent):
    session_start(agent=alice_agent, session_id="s")

    with pytest.raises(ValidationError):
        session_start(agent=alice_agent, session_id="has space")
    with pytest.raises(ValidationError):
        session_touch(agent=alice_agent, session_id="s", turns=-1)
    with pytest.raises(ValidationError):
        session_end(agent=alice_agent, session_id="s", reason="because")
    with pytest.raises(NotFound):
        session_start(agent=alice_agent, session_id="t", project_key="0" * 64)

    session = Session.objects.get()
    assert (session.turns, session.ended_at) == (0, None)


def test_another_agents_session_is_not_found(alice_agent, bob):
    session_start(agent=register(bob), session_id="bobs")

    with pytest.raises(NotFound):
        session_touch(agent=alice_agent, session_id="bobs")
    with pytest.raises(NotFound):
        session_end(agent=alice_agent, session_id="bobs")


def test_a_summary_is_an_episodic_memory_of_the_session(alice_agent, es_store):
    session_start(agent=alice_agent, session_id="sess-9")

    session = session_end(
        agent=alice_agent, session_id="sess-9", summary="Moved the deploy to Fridays."
    )

    doc = memory_get(user=alice_agent.user, memory_id=session.summary_memory_id)
    assert doc.memory_type == "episodic"
    assert (doc.session_id, doc.agent) == ("sess-9", "claude-code")
    assert Session.objects.get().summary_memory_id == doc.id
