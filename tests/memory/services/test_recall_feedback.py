"""Issue 33's recall methods as plan knobs: pseudo-relevance feedback (``RecallPlan.feedback_*``,
``memory.query.feedback_terms``) and a head with at most a few turns per session
(``RecallPlan.session_cap``, ``memory.fusion.cap_per_session``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from atlas_platform.exceptions import ValidationError
from memory.fusion import Fused, cap_per_session
from memory.plans import RecallPlan
from memory.query import feedback_terms
from memory.services.imports import ImportedMemory, memory_import
from memory.services.recall import memory_recall

MARCH = datetime(2026, 3, 19, 18, 0, tzinfo=UTC)


def turn(text: str, minute: int, *, session: str | None = "s01") -> ImportedMemory:
    return ImportedMemory(
        memory_type="episodic",
        text=text,
        timestamp=MARCH + timedelta(minutes=minute),
        source="turn",
        session_id=session,
    )


# --- the pure steps --------------------------------------------------------------------------
def test_feedback_terms_prefer_words_several_hits_share_and_skip_the_querys() -> None:
    texts = [
        "The kiln cracked during the glaze firing.",
        "Glaze recipe: celadon, celadon, celadon.",
        "Kiln shelves and glaze drips, again.",
    ]
    terms = feedback_terms("Why did the kiln crack?", texts, limit=3)
    # "glaze" is in all three; "celadon" is said three times but in one; "kiln" was asked.
    assert terms == ["glaze", "celadon", "cracked"]
    assert feedback_terms("kiln", texts, limit=0) == []
    assert "the" not in feedback_terms("kiln", texts, limit=50)  # function words never


def test_the_cap_holds_back_a_sessions_extra_turns_and_drops_nothing() -> None:
    fused = [Fused(name, 1.0 - n / 10) for n, name in enumerate(["a1", "a2", "a3", "f", "b1"])]
    sessions = {"a1": "A", "a2": "A", "a3": "A", "b1": "B"}  # f: a fact, no session
    capped = cap_per_session(fused, sessions, cap=2, head=4)
    assert [f.id for f in capped] == ["a1", "a2", "f", "b1", "a3"]
    # Off at 0; past the head nothing is reordered.
    assert cap_per_session(fused, sessions, cap=0, head=4) == fused
    assert [f.id for f in cap_per_session(fused, sessions, cap=1, head=2)] == [
        "a1",
        "f",
        "a2",
        "a3",
        "b1",
    ]


@pytest.mark.parametrize(
    "plan",
    [
        {"feedback_docs": 21},
        {"feedback_terms": -1},
        {"feedback_dense": 11.0},
        {"feedback_weight": -0.5},
        {"session_cap": 51},
    ],
)
def test_a_plan_refuses_feedback_or_a_cap_out_of_range(plan: dict[str, float]) -> None:
    with pytest.raises(ValidationError):
        RecallPlan(**plan)  # type: ignore[arg-type]


# --- recall, on each backend ----------------------------------------------------------------
def lexical(**knobs: Any) -> RecallPlan:
    """The lexical leg alone, no spread: what these tests rank is one leg's order."""
    return RecallPlan(legs=("lexical",), session_spread=0.0, **knobs)


def test_feedback_finds_a_memory_through_the_first_hits_words(people) -> None:
    docs = memory_import(
        user=people.alice,
        memories=[
            turn("The kiln cracked during the glaze firing", 1),
            turn("Celadon glaze recipe from the workshop", 2, session="s02"),
        ],
    )
    kwargs = {"user": people.alice, "query": "kiln", "k": 5, "track_usage": False}
    without = memory_recall(**kwargs, plan=lexical())
    assert [h.doc.id for h in without.hits] == [docs[0].id]
    fed = memory_recall(**kwargs, plan=lexical(feedback_docs=1, feedback_terms=3))
    assert [h.doc.id for h in fed.hits] == [docs[0].id, docs[1].id]
    assert set(fed.hits[1].leg_ranks) == {"lexical_feedback"}
    assert fed.timings_ms["feedback_ms"] >= 0


def test_feedback_reads_only_the_askers_own_memories(people) -> None:
    # Bob's and Globex's turns match "kiln" better than Alice's and hold "marmalade"; if
    # feedback read them, Alice's marmalade note would be found through it.
    for other in (people.bob, people.charlie):
        memory_import(user=other, memories=[turn("kiln kiln kiln marmalade marmalade", 1)])
    mine = memory_import(
        user=people.alice,
        # Another session: a turn's lexical context holds the previous turn's words.
        memories=[
            turn("The kiln is warming up", 1),
            turn("marmalade jar labels", 2, session="s02"),
        ],
    )
    fed = memory_recall(
        user=people.alice,
        query="kiln",
        k=5,
        track_usage=False,
        plan=lexical(feedback_docs=3, feedback_terms=5),
    )
    assert [h.doc.id for h in fed.hits] == [mine[0].id]
    assert all(h.doc.user_id == mine[0].user_id for h in fed.hits)


def test_dense_feedback_adds_a_dense_leg_of_the_askers_hits(people, monkeypatch) -> None:
    from memory.services import common, recall

    memory_import(
        user=people.alice,
        memories=[turn("The kiln cracked during the glaze firing", 1), turn("Tea at four", 2)],
    )
    embedded: list[list[str]] = []
    real_embedder = common.embedder

    class Counted:
        def __init__(self) -> None:
            self.model = real_embedder()

        def embed(self, texts: list[str]) -> object:
            embedded.append(list(texts))
            return self.model.embed(texts)

        def embed_query(self, text: str) -> list[float]:
            return self.model.embed_query(text)

    monkeypatch.setattr(recall, "embedder", Counted)
    fed = memory_recall(
        user=people.alice,
        query="kiln",
        k=5,
        track_usage=False,
        plan=RecallPlan(feedback_docs=2, feedback_dense=0.5),
    )
    assert any("dense_feedback" in h.leg_ranks for h in fed.hits)
    assert not any("lexical_feedback" in h.leg_ranks for h in fed.hits)  # no terms asked
    assert embedded == []  # the hits' stored vectors are read, their texts not embedded again


def test_the_cap_leaves_room_for_a_second_sessions_turn(people) -> None:
    docs = memory_import(
        user=people.alice,
        memories=[
            turn("kiln kiln kiln firing log", 1),
            turn("kiln kiln kiln temperature", 2),
            turn("kiln kiln kiln cone ten", 3),
            turn("we also talked about the kiln, the shed and the weather today", 9, session="s02"),
            turn("kiln note without a session", 20, session=None),
        ],
    )
    kwargs = {"user": people.alice, "query": "kiln", "k": 3, "track_usage": False}
    plain = [h.doc.id for h in memory_recall(**kwargs, plan=lexical()).hits]
    assert set(plain) == {docs[0].id, docs[1].id, docs[2].id}
    capped = memory_recall(**kwargs, plan=lexical(session_cap=2)).hits
    sessions = [h.doc.session_id for h in capped]
    assert sessions.count("s01") == 2 and len(capped) == 3
    assert {docs[3].id, docs[4].id} & {h.doc.id for h in capped}
