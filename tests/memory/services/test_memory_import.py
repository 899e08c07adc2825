"""``memory_import``: a user's history written as of its own times, on every backend."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from atlas_platform.exceptions import NotFound, ValidationError
from memory.selectors import memory_get
from memory.services import imports
from memory.services.common import backend, embedder
from memory.services.imports import ImportedMemory, memory_import
from memory.services.recall import memory_recall
from memory.services.scoping import user_read_scope
from memory.services.writes import embedding_text
from tenants.models import AuditEvent

MARCH = datetime(2026, 3, 2, 8, 30, tzinfo=UTC)
APRIL = datetime(2026, 4, 11, 19, 0, tzinfo=UTC)


def episode(text: str = "The kettle tripped the fuse again", **kw) -> ImportedMemory:
    fields = {"source": "turn", "session_id": "s01", "agent": "eval", **kw}
    return ImportedMemory(memory_type="episodic", text=text, timestamp=MARCH, **fields)


def fact(text: str = "The fuse box is in the cellar", **kw) -> ImportedMemory:
    return ImportedMemory(memory_type="semantic", text=text, timestamp=APRIL, **kw)


def playbook(**kw) -> ImportedMemory:
    fields = {
        "name": "Reset the fuse",
        "trigger": "the power is out",
        "steps": ["Go to the cellar", "Flip the breaker", "Test the kettle"],
        "success_count": 3,
        "failure_count": 1,
        **kw,
    }
    return ImportedMemory(
        memory_type="procedural", text="Flip the breaker back.", timestamp=APRIL, **fields
    )


def stored(user) -> int:
    return sum(backend().count(user_read_scope(user)).values())


def test_it_stores_what_a_turn_and_a_write_store_as_of_the_given_times(people):
    (ep,) = memory_import(user=people.alice, memories=[episode()])
    docs = memory_import(
        user=people.alice,
        memories=[
            fact(
                fact_type="world",
                confidence=0.8,
                tags=["fact:device"],
                metadata={"eval_key": "tt-se-001"},
                supporting_episode_ids=[ep.id],
            ),
            playbook(metadata={"eval_key": "tt-pr-001"}),
        ],
    )

    turn = memory_get(user=people.alice, memory_id=ep.id)
    assert (turn.created_at, turn.timestamp, turn.last_used_at) == (MARCH, MARCH, None)
    assert (turn.source, turn.session_id, turn.agent, turn.metadata) == ("turn", "s01", "eval", {})
    known = memory_get(user=people.alice, memory_id=docs[0].id)
    assert (known.created_at, known.timestamp, known.last_used_at) == (APRIL, APRIL, APRIL)
    assert (known.fact_type, known.confidence, known.source) == ("world", 0.8, "agent")
    assert known.tags == ["fact:device"] and known.supporting_episode_ids == [ep.id]
    assert known.metadata == {"eval_key": "tt-se-001"} and known.supersedes == []
    steps = memory_get(user=people.alice, memory_id=docs[1].id)
    assert (steps.name, steps.trigger, steps.success_count, steps.failure_count) == (
        "Reset the fuse",
        "the power is out",
        3,
        1,
    )
    assert steps.steps[1] == {"order": 2, "instruction": "Flip the breaker", "tool": None}
    assert steps.last_used_at is None and steps.created_at == APRIL
    # The dense leg sees what memory_write would embed: a playbook's name and trigger too.
    text = embedding_text("procedural", steps.text, name=steps.name, trigger=steps.trigger)
    stored = docs[1].embedding  # reads leave embeddings out; the import returns what it wrote
    assert stored is not None
    assert np.allclose(stored, embedder().embed_one(text), atol=1e-5)
    found = memory_recall(user=people.alice, query="how do I reset the fuse when the power is out")
    assert {h.doc.id for h in found.hits} >= {docs[1].id, ep.id}


@pytest.mark.parametrize(
    ("bad", "code"),
    [
        (episode(text=" "), "empty_text"),
        (episode(text="x" * 9000), "text_too_long"),
        (ImportedMemory(memory_type="catalog", text="a", timestamp=MARCH), "bad_memory_type"),
        (
            ImportedMemory(memory_type="episodic", text="a", timestamp=datetime(2026, 3, 2)),
            "bad_timestamp",
        ),
        (episode(source="rumour"), "bad_source"),
        (episode(fact_type="world"), "bad_fields"),
        (fact(session_id="s01"), "bad_fields"),
        (fact(steps=["a step"]), "bad_fields"),
        (fact(fact_type="gossip"), "bad_fact_type"),
        (fact(confidence=1.5), "bad_confidence"),
        (fact(valid_from=APRIL, valid_to=MARCH), "bad_validity"),
        (playbook(steps=["ok", " "]), "bad_steps"),
        (playbook(failure_count=-1), "bad_counts"),
    ],
)
def test_bad_input_anywhere_writes_nothing(people, bad, code):
    with pytest.raises(ValidationError) as refused:
        memory_import(user=people.alice, memories=[episode(), fact(), bad])

    assert refused.value.code == code and "memory #3" in str(refused.value)
    assert stored(people.alice) == 0
    assert not AuditEvent.objects.filter(action__startswith="memory").exists()


def test_one_audit_event_counts_the_import_without_any_text(people):
    memory_import(user=people.alice, memories=[episode(), fact(), fact("The PIN hint is the cat")])

    (event,) = AuditEvent.objects.filter(action__startswith="memory")
    assert event.action == "memory.import"
    assert event.tenant == people.acme and event.subject_user == people.alice
    assert event.metadata == {"count": 3, "episodic": 1, "semantic": 2}
    assert memory_import(user=people.alice, memories=[]) == []
    assert AuditEvent.objects.filter(action__startswith="memory").count() == 1


def test_an_import_larger_than_a_write_batch_stores_every_memory(people, monkeypatch):
    monkeypatch.setattr(imports, "WRITE_BATCH", 2)

    docs = memory_import(user=people.alice, memories=[fact(f"fact number {n}") for n in range(5)])

    assert stored(people.alice) == 5 and len({d.id for d in docs}) == 5
    assert [memory_get(user=people.alice, memory_id=d.id).text for d in docs] == [
        f"fact number {n}" for n in range(5)
    ]


def test_another_user_or_tenant_sees_nothing_of_an_import(people):
    docs = memory_import(user=people.alice, memories=[episode(), fact(), playbook()])

    assert {d.user_id for d in docs} == {people.alice.memory_id}
    for other in (people.bob, people.charlie):
        found = memory_recall(user=other, query="kettle fuse cellar breaker", k=20)
        assert found.hits == []
        assert stored(other) == 0
        for doc in docs:
            with pytest.raises(NotFound):
                memory_get(user=other, memory_id=doc.id)


def test_inside_replayable_the_same_import_makes_the_same_ids(people):
    """What makes the lab's eval repeatable: ids derive from the seed, so ties between equal
    scores (broken on id) fall the same way in every run; outside it ids stay random."""
    from memory.services.intents import derived_id, replayable

    with replayable("eval:test:alice"):
        first = memory_import(user=people.alice, memories=[episode(), fact()])
    with replayable("eval:test:bob"):
        again = memory_import(user=people.bob, memories=[episode(), fact()])
    plain = memory_import(user=people.charlie, memories=[episode(), fact()])
    more = memory_import(user=people.charlie, memories=[episode(), fact()])

    assert [d.id for d in first] == [derived_id("eval:test:alice", n) for n in (0, 1)]
    assert [d.id for d in again] == [derived_id("eval:test:bob", n) for n in (0, 1)]
    assert {d.id for d in plain}.isdisjoint(d.id for d in more)
