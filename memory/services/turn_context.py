"""A conversation turn's context, the one place it is decided: what the dense leg embeds for
a turn, and the words its lexical context field is indexed with.

A turn like "We did! She's coming home Saturday" means nothing alone; with the turn before it
("Did you go and meet the greyhound?"), its speaker and its date it does. The context goes only
into the text the turn's vector is computed from: the stored text, and so what recall returns,
stay the turn's own words.

``ATLAS_TURN_CONTEXT`` names the parts, comma-separated: ``previous`` (the turn before it in
the same session), ``speaker`` (``metadata.speaker``), ``date`` (the session day, as words).
Empty: the turn alone. Measurements: atlas-lab/lab/docs/recall-notebook.md ("Methods for
conversational recall").

The lexical context (``ATLAS_TURN_LEXICAL_CONTEXT``, parts ``previous``, ``speaker``,
``next``; default ``previous``) is the turn's ``MemoryDoc.context``: indexed by both engines
in a field of its own that the lexical leg matches at ``ATLAS_TURN_CONTEXT_BOOST`` of the
text's weight, never returned. "Karaoke. I've booked a room" is found for "Where was Maya's
birthday party?" through the turn before it, which holds "birthday". ``context_ids`` names the
turns the words came from: deleting one clears the context (the engines do it), so erased
words never stay searchable in a neighbour. The live write path (``memory_turn_record``,
``memory_reply_record``) reads the session's newest turn before the new one
(``MemoryBackend.previous_turn``, one bounded read), and with ``next`` also rewrites that
turn's context (one update per turn: off by default, measured as not worth it);
``memory_import`` takes both neighbours from the batch. Measurements:
atlas-lab/lab/docs/recall-notebook.md ("A lexical context field for turns").
"""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings

from memory.engine.types import MemoryDoc
from memory.services.common import backend

PARTS = ("previous", "speaker", "date")
LEXICAL_PARTS = ("previous", "speaker", "next")
PREVIOUS_CHARS = 300  # enough for a chat turn; a long previous message is cut, not the turn
CONTEXT_CHARS = 1000  # the most a turn's lexical context holds


def _parts(name: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
    raw = str(getattr(settings, name, "") or "")
    return tuple(p for p in (part.strip() for part in raw.split(",")) if p in allowed)


def context_parts() -> tuple[str, ...]:
    return _parts("ATLAS_TURN_CONTEXT", PARTS)


def lexical_parts() -> tuple[str, ...]:
    """The parts of a turn's lexical context (``ATLAS_TURN_LEXICAL_CONTEXT``)."""
    return _parts("ATLAS_TURN_LEXICAL_CONTEXT", LEXICAL_PARTS)


def with_lexical_context(
    doc: MemoryDoc,
    previous: MemoryDoc | None,
    following: MemoryDoc | None = None,
    parts: Sequence[str] | None = None,
) -> MemoryDoc:
    """Set episode ``doc``'s lexical context (``context`` and ``context_ids``) from its
    neighbours in the session (None: none); other documents are left as they are. Returns
    ``doc``."""
    parts = lexical_parts() if parts is None else tuple(parts)
    if doc.memory_type != "episodic" or not parts:
        return doc
    words: list[str] = []
    ids: list[str] = []
    if "speaker" in parts:
        speaker = (doc.metadata or {}).get("speaker")
        if isinstance(speaker, str) and speaker.strip():
            words.append(speaker.strip())
    for part, neighbour in (("previous", previous), ("next", following)):
        if part in parts and neighbour is not None and neighbour.id != doc.id:
            words.append(neighbour.text[:PREVIOUS_CHARS])
            ids.append(neighbour.id)
    context = "\n".join(words)[:CONTEXT_CHARS]
    doc.context = context or None
    doc.context_ids = ids if context else []
    return doc


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


def with_live_context(
    doc: MemoryDoc, *, session_opened: bool = False
) -> tuple[MemoryDoc, MemoryDoc | None]:
    """A live turn's lexical context: the session's newest turn before it, read from the store
    (one bounded read, only for a turn with a session and ``previous`` or ``next`` in the
    parts; none for the first turn of a session opened for it). Returns the turn and that
    previous turn (for ``link_following``)."""
    parts = lexical_parts()
    if doc.memory_type != "episodic" or not parts:
        return doc, None
    previous = None
    wants_previous = {"previous", "next"} & set(parts) and not session_opened
    if wants_previous and doc.session_id and doc.user_id:
        previous = backend().previous_turn(
            tenant_id=doc.tenant_id,
            user_id=doc.user_id,
            session_id=doc.session_id,
            before=doc.timestamp,
        )
    return with_lexical_context(doc, previous, None, parts), previous


def link_following(previous: MemoryDoc | None, doc: MemoryDoc) -> None:
    """With ``next`` in the parts: add live turn ``doc``'s words to the context of the turn
    before it (one update of that document per turn)."""
    if previous is None or previous.id == doc.id or "next" not in lexical_parts():
        return

    def add(current: MemoryDoc) -> dict[str, object]:
        if doc.id in current.context_ids:  # a retried write: added already
            return {}
        words = "\n".join(w for w in (current.context, doc.text[:PREVIOUS_CHARS]) if w)
        return {
            "context": words[:CONTEXT_CHARS],
            "context_ids": [*current.context_ids, doc.id],
        }

    backend().update(previous, add)


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


def next_turns(docs: Sequence[MemoryDoc]) -> list[MemoryDoc | None]:
    """For each document, the episode just after it in the same session among ``docs``."""
    following: list[MemoryDoc | None] = [None] * len(docs)
    index = {id(doc): n for n, doc in enumerate(docs)}
    for n, previous in enumerate(previous_turns(docs)):
        if previous is not None:
            following[index[id(previous)]] = docs[n]
    return following
