"""Recall's session spread: a turn at the fused head lends a share of its score to the turns
around it in its session (``memory.fusion.spread_to_neighbours``), read through each
backend's ``session_neighbours``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from atlas_platform.exceptions import ValidationError
from memory.engine.elasticsearch import reads as es_reads
from memory.engine.types import (
    LegQuery,
    MemoryDoc,
    Neighbours,
    Ranking,
    RecallFilter,
    SessionTurn,
)
from memory.fusion import Fused, spread_to_neighbours
from memory.plans import RecallPlan
from memory.services.common import backend
from memory.services.imports import ImportedMemory, memory_import
from memory.services.recall import memory_recall
from memory.services.scoping import user_read_scope
from memory.shapes import recall_hit_json

MARCH = datetime(2026, 3, 19, 18, 0, tzinfo=UTC)


def at(doc: MemoryDoc) -> SessionTurn:
    assert doc.session_id is not None
    return SessionTurn(id=doc.id, session_id=doc.session_id, timestamp=doc.timestamp)


def turn(text: str, minute: int, *, session: str = "s01") -> ImportedMemory:
    return ImportedMemory(
        memory_type="episodic",
        text=text,
        timestamp=MARCH + timedelta(minutes=minute),
        source="turn",
        session_id=session,
    )


# --- the fusion step -------------------------------------------------------------------------
def test_a_turn_lends_its_share_to_its_neighbours_divided_by_distance() -> None:
    fused = [Fused("a", 1.0, {"lexical": 1}), Fused("b", 0.4, {"dense": 3})]
    around = {"a": Neighbours(before=("p1", "p2"), after=("b",))}
    spread = {f.id: f for f in spread_to_neighbours(fused, around, weight=0.25)}
    assert spread["p1"].score == pytest.approx(0.25)
    assert spread["p2"].score == pytest.approx(0.125)
    assert spread["b"].score == pytest.approx(0.4 + 0.25)
    assert spread["a"].score == 1.0  # nobody lent to it
    # A turn no leg found carries the rank of the turn that lent to it.
    assert spread["p1"].leg_ranks == {"session": 1}
    assert spread["b"].leg_ranks == {"dense": 3, "session": 1}
    assert spread["b"].leg_scores["session"] == pytest.approx(0.25)
    assert [f.id for f in spread_to_neighbours(fused, around, weight=0.25)] == [
        "a",
        "b",
        "p1",
        "p2",
    ]
    assert fused[1].score == 0.4 and "session" not in fused[1].leg_ranks  # input untouched


def test_bonuses_come_from_the_scores_before_any_was_added() -> None:
    # b borrows from a, then lends: what it lends is its own fused score, not what it borrowed.
    fused = [Fused("a", 1.0, {"lexical": 1}), Fused("b", 0.2, {"lexical": 2})]
    around = {"a": Neighbours(after=("b",)), "b": Neighbours(after=("c",))}
    spread = {f.id: f for f in spread_to_neighbours(fused, around, weight=0.5)}
    assert spread["b"].score == pytest.approx(0.7)
    assert spread["c"].score == pytest.approx(0.1)
    assert spread["c"].leg_ranks == {"session": 2}


def test_no_spread_at_weight_zero_or_without_neighbours() -> None:
    fused = [Fused("a", 1.0, {"lexical": 1})]
    assert spread_to_neighbours(fused, {"a": Neighbours(after=("b",))}, weight=0.0) == fused
    assert spread_to_neighbours(fused, {}, weight=0.25) == fused


def test_a_plan_refuses_a_spread_out_of_range() -> None:
    with pytest.raises(ValidationError):
        RecallPlan(session_spread=1.5)
    with pytest.raises(ValidationError):
        RecallPlan(session_depth=-1)


# --- each backend's read ---------------------------------------------------------------------
@pytest.mark.parametrize("session_read_cap", [1000, 3])
def test_neighbours_are_the_nearest_turns_of_the_same_session(
    people, monkeypatch, session_read_cap
) -> None:
    # Elasticsearch reads whole sessions up to a cap, and the turns of a session past it one
    # by one: both ways give the same answer.
    monkeypatch.setattr(es_reads, "SESSION_READ_CAP", session_read_cap)
    docs = memory_import(
        user=people.alice,
        memories=[
            turn("one", 1),
            turn("two", 2),
            turn("elsewhere", 3, session="s02"),
            turn("three", 4),
            turn("four", 5),
            turn("five", 6),
        ],
    )
    one, two, elsewhere, three, four, five = (at(d) for d in docs)
    scope = user_read_scope(people.alice)
    found = backend().session_neighbours(scope, [three], depth=2)
    assert found == {three.id: Neighbours(before=(two.id, one.id), after=(four.id, five.id))}
    assert backend().session_neighbours(scope, [one, elsewhere], depth=1) == {
        one.id: Neighbours(before=(), after=(two.id,)),
        elsewhere.id: Neighbours(),
    }
    # Inside an explicit time range only.
    bounded = backend().session_neighbours(
        scope,
        [three],
        depth=2,
        since=MARCH + timedelta(minutes=2),
        until=MARCH + timedelta(minutes=5),
    )
    assert bounded == {three.id: Neighbours(before=(two.id,), after=(four.id,))}


def test_another_users_turns_are_never_neighbours(people) -> None:
    (mine,) = memory_import(user=people.alice, memories=[turn("mine", 2)])
    bobs = memory_import(user=people.bob, memories=[turn("bob before", 1), turn("bob after", 3)])
    (foreign,) = memory_import(user=people.charlie, memories=[turn("globex", 4)])
    alice = user_read_scope(people.alice)
    assert backend().session_neighbours(alice, [at(mine)], depth=3) == {mine.id: Neighbours()}
    # Asked about the same session and times as Bob's or Globex's turns, Alice's scope
    # finds only Alice's own turns of a session by that name.
    asked = backend().session_neighbours(alice, [at(bobs[0]), at(foreign)], depth=3)
    assert asked == {
        bobs[0].id: Neighbours(after=(mine.id,)),
        foreign.id: Neighbours(before=(mine.id,)),
    }
    bob = user_read_scope(people.bob)
    assert backend().session_neighbours(bob, [at(bobs[0])], depth=3) == {
        bobs[0].id: Neighbours(after=(bobs[1].id,))
    }


def test_the_legs_carry_a_turns_session_and_time(people) -> None:
    (said,) = memory_import(user=people.alice, memories=[turn("the kiln cracked", 1)])
    (fact,) = memory_import(
        user=people.alice,
        memories=[ImportedMemory(memory_type="semantic", text="The kiln is new.", timestamp=MARCH)],
    )
    result = memory_recall(
        user=people.alice, query="kiln", k=5, track_usage=False, plan=RecallPlan(legs=("lexical",))
    )
    assert {h.doc.id for h in result.hits} == {said.id, fact.id}
    legs = backend().recall_legs(
        user_read_scope(people.alice),
        LegQuery(
            text="kiln",
            vector=None,
            filter=RecallFilter(),
            ranking=Ranking(),
            now=MARCH + timedelta(days=1),
        ),
    )
    by_id = {hit.id: hit for hit in legs.lexical}
    assert (by_id[said.id].session_id, by_id[said.id].timestamp) == ("s01", said.timestamp)
    assert (by_id[fact.id].session_id, by_id[fact.id].timestamp) == (None, None)


# --- recall ----------------------------------------------------------------------------------
def _exchange(people) -> list[MemoryDoc]:
    return memory_import(
        user=people.alice,
        memories=[
            turn("Good luck, treat yourself after", 1),
            turn("They cut the whole data team today, me included", 2),
            turn("Oh Sam, I'm so sorry about the redundancy", 3),
            turn("Courgettes, far too many courgettes", 4, session="s02"),
            turn("The allotment is a jungle", 5, session="s02"),
        ],
    )


def test_recall_finds_a_turn_through_the_reply_that_names_it(people) -> None:
    docs = _exchange(people)
    news = docs[1]
    plan = RecallPlan(legs=("lexical",))
    kwargs = {"user": people.alice, "query": "Sam redundancy", "k": 5, "track_usage": False}
    without = memory_recall(**kwargs, plan=RecallPlan(legs=("lexical",), session_spread=0.0))
    assert news.id not in [h.doc.id for h in without.hits]  # no word of the query in it
    result = memory_recall(**kwargs, plan=plan)
    ids = [h.doc.id for h in result.hits]
    assert ids[0] == docs[2].id and news.id in ids
    hit = next(h for h in result.hits if h.doc.id == news.id)
    assert hit.leg_ranks == {"session": 1}
    assert hit.doc.text == "They cut the whole data team today, me included"
    shown = recall_hit_json(hit)
    assert shown["leg_ranks"] == {"session": 1} and shown["score"] > 0
    assert result.timings_ms["spread_ms"] >= 0
    # The other session's turns borrow nothing.
    assert not {docs[3].id, docs[4].id} & set(ids)


def test_an_excluded_turn_lends_nothing(people) -> None:
    docs = _exchange(people)
    result = memory_recall(
        user=people.alice,
        query="Sam redundancy",
        k=5,
        track_usage=False,
        exclude_ids=[docs[2].id],
        plan=RecallPlan(legs=("lexical",)),
    )
    assert docs[1].id not in [h.doc.id for h in result.hits]


def test_no_spread_when_episodes_are_not_asked_for(people) -> None:
    _exchange(people)
    result = memory_recall(
        user=people.alice,
        query="Sam redundancy",
        k=5,
        track_usage=False,
        memory_types=["semantic"],
        plan=RecallPlan(legs=("lexical",)),
    )
    assert result.hits == [] and "spread_ms" not in result.timings_ms
