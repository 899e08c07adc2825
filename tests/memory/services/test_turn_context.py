"""A turn's vector carries its context (previous turn, speaker, date), and its lexical context
field the previous turn's words; what recall returns stays the turn's own words
(``memory.services.turn_context``)."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta

import numpy as np

from memory.engine.types import MemoryDoc
from memory.plans import RecallPlan
from memory.selectors import memory_previous_turn
from memory.services.common import backend, embedder
from memory.services.imports import ImportedMemory, memory_import
from memory.services.recall import memory_recall
from memory.services.scoping import user_read_scope
from memory.services.turn_context import (
    CONTEXT_CHARS,
    next_turns,
    previous_turns,
    turn_embedding_text,
    with_lexical_context,
)
from memory.services.writes import memory_forget, memory_turn_record
from memory.shapes import recall_hit_json
from tenants.services.tokens import token_issue

MAY = datetime(2026, 5, 9, 18, 0, tzinfo=UTC)


def turn(text: str, minute: int, *, session: str = "s01", speaker: str = "Tom") -> ImportedMemory:
    return ImportedMemory(
        memory_type="episodic",
        text=text,
        timestamp=MAY + timedelta(minutes=minute),
        source="turn",
        session_id=session,
        metadata={"speaker": speaker},
    )


def _doc(text: str, minute: int, session: str = "s01", speaker: str = "Tom") -> MemoryDoc:
    when = MAY + timedelta(minutes=minute)
    return MemoryDoc(
        id=f"d{minute}",
        tenant_id="t",
        user_id="u",
        memory_type="episodic",
        text=text,
        created_at=when,
        timestamp=when,
        session_id=session,
        metadata={"speaker": speaker},
    )


def test_the_previous_turn_is_the_one_before_in_the_same_session_by_time() -> None:
    a, b, c = _doc("first", 1), _doc("second", 2), _doc("other session", 3, session="s02")
    late = _doc("third", 4)
    assert previous_turns([late, b, c, a]) == [b, a, None, None]


def test_the_embedded_text_holds_the_parts_asked_for() -> None:
    before, now = _doc("Did you meet the greyhound?", 1, speaker="Maya"), _doc("We did!", 2)
    assert turn_embedding_text(now, before, parts=()) == "We did!"
    assert turn_embedding_text(now, before, parts=("previous",)) == (
        "Did you meet the greyhound?\nWe did!"
    )
    full = turn_embedding_text(now, before, parts=("previous", "speaker", "date"))
    assert full == "Saturday 09 May 2026\nMaya: Did you meet the greyhound?\nTom: We did!"
    assert turn_embedding_text(now, None, parts=("previous",)) == "We did!"


def test_recall_returns_the_turns_own_text_when_indexed_with_context(people, settings) -> None:
    settings.ATLAS_TURN_CONTEXT = "previous,speaker,date"
    settings.ATLAS_TURN_LEXICAL_CONTEXT = ""
    docs = memory_import(
        user=people.alice,
        memories=[
            turn("So, did you go and meet the greyhound at the rescue?", 1, speaker="Maya"),
            turn("We did. She's coming home on Saturday!", 2),
            turn("The boiler is making whale noises again", 3, session="s02"),
        ],
    )
    answer = docs[1]
    # The vector is the context's, not the bare turn's ...
    expected = embedder().embed(
        [
            "Saturday 09 May 2026\nMaya: So, did you go and meet the greyhound at the rescue?\n"
            "Tom: We did. She's coming home on Saturday!"
        ]
    )[0]
    assert answer.embedding is not None
    assert np.allclose(answer.embedding, expected, atol=1e-5)
    # ... and recall finds the answer turn by what it answers, returning its own words.
    result = memory_recall(
        user=people.alice,
        query="greyhound rescue adoption",
        k=3,
        track_usage=False,
        now=MAY + timedelta(days=30),
        plan=RecallPlan(legs=("dense",)),
    )
    texts = [h.doc.text for h in result.hits]
    assert "We did. She's coming home on Saturday!" in texts
    assert all("Maya:" not in t and "2026" not in t for t in texts)
    hit = next(h for h in result.hits if h.doc.id == answer.id)
    assert hit.doc.text == "We did. She's coming home on Saturday!"


def test_without_context_a_turn_embeds_its_own_text(people, settings) -> None:
    settings.ATLAS_TURN_CONTEXT = ""
    settings.ATLAS_TURN_LEXICAL_CONTEXT = ""
    (only,) = memory_import(user=people.alice, memories=[turn("We did!", 2)])
    assert only.embedding is not None
    assert np.allclose(only.embedding, embedder().embed(["We did!"])[0], atol=1e-5)


# --- the lexical context field ---------------------------------------------------------------
def test_the_lexical_context_holds_the_parts_asked_for() -> None:
    before = _doc("Where are you having your birthday?", 1, speaker="Tom")
    now, after = _doc("Karaoke. Non-negotiable.", 2, speaker="Maya"), _doc("Ha, of course", 3)
    assert with_lexical_context(_doc("x", 9), before, after, parts=()).context is None
    only_previous = with_lexical_context(_doc("x", 9), before, after, parts=("previous",))
    assert (only_previous.context, only_previous.context_ids) == (before.text, [before.id])
    every = with_lexical_context(now, before, after, parts=("previous", "speaker", "next"))
    assert every.context == "Maya\nWhere are you having your birthday?\nHa, of course"
    assert every.context_ids == [before.id, after.id]
    assert every.text == "Karaoke. Non-negotiable."  # the turn's own words are untouched
    alone = with_lexical_context(_doc("x", 9), None, None, parts=("previous", "next"))
    assert (alone.context, alone.context_ids) == (None, [])
    fact = dataclasses.replace(_doc("a fact", 5), memory_type="semantic")
    assert with_lexical_context(fact, before, after, parts=("previous",)).context is None
    long = with_lexical_context(_doc("x", 9), _doc("w " * 2000, 8), None, parts=("previous",))
    assert long.context is not None and len(long.context) <= CONTEXT_CHARS


def test_the_next_turn_is_the_one_after_in_the_same_session() -> None:
    a, b, c = _doc("first", 1), _doc("second", 2), _doc("other session", 3, session="s02")
    assert next_turns([b, c, a]) == [None, None, b]


def _recall(people, query: str, **kw):
    # The lexical leg alone, no session spread and no turn prior (it would rank the answer
    # above the asking turn): what the context field itself finds.
    kw.setdefault("session_spread", 0.0)
    kw.setdefault("turn_prior", 1.0)
    return memory_recall(
        user=people.alice,
        query=query,
        k=5,
        track_usage=False,
        now=MAY + timedelta(days=30),
        plan=RecallPlan(legs=("lexical",), **kw),
    )


def test_a_live_turn_is_indexed_with_its_sessions_previous_turn(people, settings) -> None:
    settings.ATLAS_TURN_LEXICAL_CONTEXT = "previous"
    settings.ATLAS_RECALL = dataclasses.replace(settings.ATLAS_RECALL, context_boost=0.5)
    asked = memory_turn_record(
        user=people.alice,
        text="Where are you having your birthday party?",
        session_id="chat-1",
        timestamp=MAY,
    ).episode
    other = memory_turn_record(
        user=people.alice,
        text="The boiler is making whale noises",
        session_id="chat-2",
        timestamp=MAY + timedelta(minutes=1),
    ).episode
    answer = memory_turn_record(
        user=people.alice,
        text="Karaoke. I've booked a room at Lucky Voice",
        session_id="chat-1",
        timestamp=MAY + timedelta(minutes=2),
    ).episode
    assert asked.context is None and other.context is None  # nothing before them
    assert answer.context == asked.text and answer.context_ids == [asked.id]

    found = _recall(people, "birthday party venue")
    assert [h.doc.id for h in found.hits] == [asked.id, answer.id]
    hit = found.hits[1]
    assert hit.doc.text == "Karaoke. I've booked a room at Lucky Voice"
    shown = json.dumps([recall_hit_json(h) for h in found.hits])
    assert "context" not in recall_hit_json(hit)
    assert shown.count("birthday") == 1  # only the asking turn's own text says it
    off = _recall(people, "birthday party venue", context_boost=0.0)
    assert [h.doc.id for h in off.hits] == [asked.id]


def test_the_turn_prior_ranks_the_answer_above_the_question_and_reads_the_head_once(
    people, settings, monkeypatch
) -> None:
    """The same conversation through recall on every backend: the asking turn ("...?")
    outranks its answer by the words they share, until the turn prior (the default) scores
    the question down. The documents it reads are the read step's: one read, not two."""
    settings.ATLAS_TURN_LEXICAL_CONTEXT = "previous"
    settings.ATLAS_RECALL = dataclasses.replace(settings.ATLAS_RECALL, context_boost=0.5)
    asked = memory_turn_record(
        user=people.alice,
        text="Where are you having your birthday party?",
        session_id="chat-1",
        timestamp=MAY,
    ).episode
    answer = memory_turn_record(
        user=people.alice,
        text="Karaoke. I've booked a room at Lucky Voice",
        session_id="chat-1",
        timestamp=MAY + timedelta(minutes=2),
    ).episode
    store = backend()
    reads: list[object] = []
    get_many = store.get_many

    def counted(*args, **kwargs):
        reads.append(args)
        return get_many(*args, **kwargs)

    monkeypatch.setattr(store, "get_many", counted)

    on = _recall(people, "birthday party venue", turn_prior=None)
    assert [h.doc.id for h in on.hits] == [answer.id, asked.id]
    assert len(reads) == 1 and "prior_ms" in on.timings_ms
    off = _recall(people, "birthday party venue")  # turn_prior 1: off
    assert [h.doc.id for h in off.hits] == [asked.id, answer.id]
    assert "prior_ms" not in off.timings_ms


def test_the_previous_turn_selector_reads_the_users_own_session_before_a_time(people) -> None:
    first, second, elsewhere = memory_import(
        user=people.alice,
        memories=[turn("first", 1), turn("second", 2), turn("other session", 3, session="s02")],
    )

    def before(minute: int, user=people.alice, session: str = "s01") -> str | None:
        doc = memory_previous_turn(
            user=user, session_id=session, before=MAY + timedelta(minutes=minute)
        )
        return doc.id if doc is not None else None

    assert before(5) == second.id and before(1) == first.id and before(0) is None
    assert before(5, session="s02") == elsewhere.id
    assert before(5, user=people.bob) is None  # another user's session of the same name


def test_an_import_takes_the_context_from_the_batch(people, settings) -> None:
    settings.ATLAS_TURN_LEXICAL_CONTEXT = "previous"
    settings.ATLAS_RECALL = dataclasses.replace(settings.ATLAS_RECALL, context_boost=0.5)
    asked, answer, elsewhere = memory_import(
        user=people.alice,
        memories=[
            turn("Where are you having your birthday party?", 1, speaker="Tom"),
            turn("Karaoke. I've booked a room at Lucky Voice", 2, speaker="Maya"),
            turn("Karaoke is loud", 3, session="s02"),
        ],
    )
    assert (answer.context, answer.context_ids) == (asked.text, [asked.id])
    assert elsewhere.context is None
    found = _recall(people, "birthday")
    assert [h.doc.id for h in found.hits] == [asked.id, answer.id]
    assert found.hits[1].doc.text == answer.text


def test_forgetting_a_turn_takes_its_words_out_of_the_next_turns_context(people, settings) -> None:
    settings.ATLAS_TURN_LEXICAL_CONTEXT = "previous"
    settings.ATLAS_RECALL = dataclasses.replace(settings.ATLAS_RECALL, context_boost=0.5)
    secret, answer = memory_import(
        user=people.alice,
        memories=[turn("my surprise birthday plan for Sam", 1), turn("love it", 2)],
    )
    assert [h.doc.id for h in _recall(people, "surprise birthday").hits] == [secret.id, answer.id]
    memory_forget(user=people.alice, memory_id=secret.id)
    assert _recall(people, "surprise birthday").hits == []
    (kept,) = backend().get_many(user_read_scope(people.alice), [answer.id])
    assert (kept.text, kept.context, kept.context_ids) == ("love it", None, [])


def test_turns_posted_over_rest_get_their_context_and_answer_their_own_text(
    people, settings, client
) -> None:
    settings.ATLAS_TURN_LEXICAL_CONTEXT = "previous"
    settings.ATLAS_RECALL = dataclasses.replace(settings.ATLAS_RECALL, context_boost=0.5)
    token = token_issue(tenant=people.acme, user=people.alice, name="bot").secret
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    said = []
    for minute, text in enumerate(
        ["Where are you having your birthday party?", "Karaoke. I've booked a room at Lucky Voice"]
    ):
        body = {
            "text": text,
            "session_id": "conv-7",
            "timestamp": (MAY + timedelta(minutes=minute)).isoformat(),
        }
        response = client.post(
            "/api/v1/users/alice/turns", json.dumps(body), content_type="application/json", **auth
        )
        assert response.status_code == 201, response.content
        episode = response.json()["episode"]
        assert episode["text"] == text and "context" not in episode
        said.append(episode["id"])
    response = client.post(
        "/api/v1/users/alice/recall",
        json.dumps({"query": "birthday party", "k": 5}),
        content_type="application/json",
        **auth,
    )
    assert response.status_code == 200, response.content
    hits = response.json()["hits"]
    assert said[1] in [h["id"] for h in hits]
    assert all("context" not in h for h in hits)
    assert next(h for h in hits if h["id"] == said[1])["text"] == (
        "Karaoke. I've booked a room at Lucky Voice"
    )


def test_with_next_a_live_turn_adds_its_words_to_the_turn_before(people, settings) -> None:
    settings.ATLAS_TURN_LEXICAL_CONTEXT = "previous,next"
    settings.ATLAS_RECALL = dataclasses.replace(settings.ATLAS_RECALL, context_boost=0.5)
    first, asked, answer = (
        memory_turn_record(
            user=people.alice,
            text=text,
            session_id="chat-1",
            timestamp=MAY + timedelta(minutes=minute),
        ).episode
        for minute, text in enumerate(
            ["Hiya", "Where are you having your birthday?", "Karaoke at Lucky Voice"]
        )
    )
    stored = {
        d.id: d for d in backend().get_many(user_read_scope(people.alice), [first.id, asked.id])
    }
    assert stored[first.id].context == asked.text
    assert stored[asked.id].context == f"{first.text}\n{answer.text}"
    assert stored[asked.id].context_ids == [first.id, answer.id]
    assert stored[asked.id].text == "Where are you having your birthday?"
    found = _recall(people, "karaoke")
    assert [h.doc.id for h in found.hits] == [answer.id, asked.id]
