"""A turn's vector carries its context (previous turn, speaker, date); what recall returns, and
what the lexical leg matches, stay the turn's own words (``memory.services.turn_context``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np

from memory.engine.types import MemoryDoc
from memory.plans import RecallPlan
from memory.services.common import embedder
from memory.services.imports import ImportedMemory, memory_import
from memory.services.recall import memory_recall
from memory.services.turn_context import previous_turns, turn_embedding_text

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
    (only,) = memory_import(user=people.alice, memories=[turn("We did!", 2)])
    assert only.embedding is not None
    assert np.allclose(only.embedding, embedder().embed(["We did!"])[0], atol=1e-5)
