"""Time words read against a history's own dates (``RecallPlan.time_anchor="history"``, the
default): a conversation imported with its dates and asked about long after it ended."""

from __future__ import annotations

from datetime import UTC, datetime

from memory.plans import RecallPlan
from memory.services.common import backend
from memory.services.imports import ImportedMemory, memory_import
from memory.services.recall import memory_recall
from memory.services.scoping import user_read_scope

LATER = datetime(2026, 10, 20, 12, 0, tzinfo=UTC)


def said(text: str, when: datetime) -> ImportedMemory:
    return ImportedMemory(
        memory_type="episodic", text=text, timestamp=when, source="turn", session_id="s1"
    )


def _history(people) -> None:
    memory_import(
        user=people.alice,
        memories=[
            said("The physio said three weeks off running", datetime(2023, 4, 12, 9, tzinfo=UTC)),
            said("We moved into the flat in Partick", datetime(2023, 6, 2, 9, tzinfo=UTC)),
        ],
    )
    memory_import(user=people.bob, memories=[said("Bob's note", datetime(2026, 10, 1, tzinfo=UTC))])


def test_newest_timestamp_is_the_users_own(people) -> None:
    _history(people)
    newest = backend().newest_timestamp(user_read_scope(people.alice))
    assert newest == datetime(2023, 6, 2, 9, tzinfo=UTC)
    assert backend().newest_timestamp(user_read_scope(people.charlie)) is None


def test_time_words_are_read_against_the_history_not_the_clock(people) -> None:
    _history(people)
    ask = "what did the physio say in April about running"
    clock = memory_recall(
        user=people.alice,
        query=ask,
        now=LATER,
        track_usage=False,
        plan=RecallPlan(time_anchor="clock"),
    )
    history = memory_recall(
        user=people.alice,
        query=ask,
        now=LATER,
        track_usage=False,
        plan=RecallPlan(time_anchor="history"),
    )
    assert clock.time_window is not None and clock.time_window.start.year == 2026
    assert history.time_window is not None
    assert (history.time_window.start.year, history.time_window.start.month) == (2023, 4)
    assert history.hits[0].doc.text == "The physio said three weeks off running"
    # A user whose history is current reads time words against the clock either way.
    bob = memory_recall(
        user=people.bob,
        query="notes from April",
        now=LATER,
        track_usage=False,
        plan=RecallPlan(time_anchor="history"),
    )
    assert bob.time_window is not None and bob.time_window.start.year == 2026


def test_a_recent_users_anchor_is_kept_and_an_old_historys_is_read_each_time(
    people, monkeypatch
) -> None:
    _history(people)
    memory_import(user=people.bob, memories=[said("Bob again", datetime(2026, 10, 15, tzinfo=UTC))])
    reads: list[str | None] = []
    engine = backend()
    real = engine.newest_timestamp

    def counted(scope):
        reads.append(scope.user_id)
        return real(scope)

    monkeypatch.setattr(engine, "newest_timestamp", counted)

    def ask(user, now: datetime):
        return memory_recall(
            user=user,
            query="what happened recently",
            track_usage=False,
            now=now,
            plan=RecallPlan(time_anchor="history"),
        )

    # Bob wrote five days before LATER: the clock, read once, then kept.
    assert ask(people.bob, LATER).time_window.end == LATER
    assert ask(people.bob, LATER).time_window.end == LATER
    assert reads == [people.bob.memory_id]
    # Alice's history ended in 2023: read on every recall, so a new turn moves her anchor at
    # once.
    reads.clear()
    assert ask(people.alice, LATER).time_window.end.year == 2023
    memory_import(
        user=people.alice, memories=[said("Back again!", datetime(2026, 10, 19, tzinfo=UTC))]
    )
    assert ask(people.alice, LATER).time_window.end == LATER
    assert reads == [people.alice.memory_id] * 2
