"""What the dense leg embeds for a conversation turn: the turn with the context that gives it
meaning (the one place this is decided).

A turn like "We did! She's coming home Saturday" means nothing alone; with the turn before it
("Did you go and meet the greyhound?"), its speaker and its date it does. The context goes only
into the text the turn's vector is computed from: the stored text, and so what recall returns
and what the lexical leg matches, stay the turn's own words.

``ATLAS_TURN_CONTEXT`` names the parts, comma-separated: ``previous`` (the turn before it in
the same session), ``speaker`` (``metadata.speaker``), ``date`` (the session day, as words).
Empty: the turn alone. Measurements: docs/recall-quality.md ("Turn context").
"""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings

from memory.engine.types import MemoryDoc

PARTS = ("previous", "speaker", "date")
PREVIOUS_CHARS = 300  # enough for a chat turn; a long previous message is cut, not the turn


def context_parts() -> tuple[str, ...]:
    raw = str(getattr(settings, "ATLAS_TURN_CONTEXT", "") or "")
    return tuple(p for p in (part.strip() for part in raw.split(",")) if p in PARTS)


def turn_embedding_text(
    doc: MemoryDoc, previous: MemoryDoc | None, parts: Sequence[str] | None = None
) -> str:
    """The text embedded for episode ``doc`` (``previous``: the turn before it in its session,
    or None)."""
    parts = context_parts() if parts is None else tuple(parts)
    if doc.memory_type != "episodic" or not parts:
        return doc.text
    lines = []
    if "date" in parts:
        lines.append(doc.timestamp.strftime("%A %d %B %Y"))
    if "previous" in parts and previous is not None:
        lines.append(_said(previous, parts)[:PREVIOUS_CHARS])
    lines.append(_said(doc, parts))
    return "\n".join(lines)


def _said(doc: MemoryDoc, parts: Sequence[str]) -> str:
    speaker = (doc.metadata or {}).get("speaker") if "speaker" in parts else None
    return f"{speaker}: {doc.text}" if isinstance(speaker, str) and speaker.strip() else doc.text


def previous_turns(docs: Sequence[MemoryDoc]) -> list[MemoryDoc | None]:
    """For each document, the episode just before it in the same session among ``docs`` (by
    timestamp), or None."""
    last: dict[str, MemoryDoc] = {}
    out: dict[int, MemoryDoc | None] = {}
    order = sorted(range(len(docs)), key=lambda n: (docs[n].timestamp, n))
    for n in order:
        doc = docs[n]
        if doc.memory_type != "episodic" or not doc.session_id:
            out[n] = None
            continue
        out[n] = last.get(doc.session_id)
        last[doc.session_id] = doc
    return [out[n] for n in range(len(docs))]
