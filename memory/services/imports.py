"""Bulk import: a user's remembered history (episodes, facts, playbooks) written as of its own
times, in one embedding batch and a few store batches. The evaluation corpus and the bench load
through it; a fact that supersedes another goes through ``memory_write`` instead, so the older
fact is marked as it would be live."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction

from atlas_platform.exceptions import ValidationError
from memory.engine.types import PERSONAL_TYPES, MemoryDoc
from memory.services.common import (
    backend,
    clean_confidence,
    clean_metadata,
    clean_text,
    embedder,
    store_errors,
)
from memory.services.intents import next_memory_id
from memory.services.sessions import sessions_assign
from memory.services.turn_context import (
    next_turns,
    previous_turns,
    turn_embedding_text,
    with_lexical_context,
)
from memory.services.writes import FACT_TYPES, _clean_steps, embedding_text
from tenants.models import User
from tenants.services.audit import audit_record

WRITE_BATCH = 200  # documents per store write (one refresh each)
SOURCES = ("turn", "agent", "consolidation", "operator")


@dataclass(frozen=True)
class ImportedMemory:
    """One memory to import. ``timestamp`` (timezone-aware) is when it happened: the stored
    ``timestamp`` and ``created_at``, and a fact's first ``last_used_at``. Fields of another
    memory type than ``memory_type`` must stay at their defaults (all empty)."""

    memory_type: str  # episodic | semantic | procedural
    text: str
    timestamp: datetime
    source: str = "agent"
    tags: Sequence[str] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    confidence: float = 1.0
    # episodic
    session_id: str | None = None
    agent: str | None = None
    # semantic
    fact_type: str | None = None
    supporting_episode_ids: Sequence[str] = ()
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    # procedural
    name: str | None = None
    description: str | None = None
    trigger: str | None = None
    steps: Sequence[Any] = ()
    success_count: int = 0
    failure_count: int = 0


_EPISODIC = ("session_id", "agent")
_SEMANTIC = ("fact_type", "supporting_episode_ids", "valid_from", "valid_to")
_PROCEDURAL = ("name", "description", "trigger", "steps", "success_count", "failure_count")
_OWN_FIELDS = {"episodic": _EPISODIC, "semantic": _SEMANTIC, "procedural": _PROCEDURAL}


def _doc(user: User, item: ImportedMemory, n: int) -> MemoryDoc:
    """The unembedded document for ``item``, or a ``ValidationError`` naming it (``#n``)."""
    try:
        _check(item)
        return _build(user, item)
    except ValidationError as exc:
        raise ValidationError(f"memory #{n}: {exc.message}", code=exc.code) from exc


def _check(item: ImportedMemory) -> None:
    if item.memory_type not in PERSONAL_TYPES:
        raise ValidationError(
            "memory_type must be episodic, semantic or procedural.",
            code="bad_memory_type",
        )
    if not isinstance(item.timestamp, datetime) or item.timestamp.tzinfo is None:
        raise ValidationError("timestamp must be timezone-aware.", code="bad_timestamp")
    if item.source not in SOURCES:
        raise ValidationError(f"source must be one of {', '.join(SOURCES)}.", code="bad_source")
    for kind, names in _OWN_FIELDS.items():
        stray = [n for n in names if kind != item.memory_type and getattr(item, n)]
        if stray:
            raise ValidationError(
                f"{', '.join(stray)} only belong to {kind} memories.",
                code="bad_fields",
            )
    if item.fact_type is not None and item.fact_type not in FACT_TYPES:
        raise ValidationError(
            f"fact_type must be one of {', '.join(FACT_TYPES)}.", code="bad_fact_type"
        )
    if item.valid_from and item.valid_to and item.valid_from > item.valid_to:
        raise ValidationError("valid_from is after valid_to.", code="bad_validity")
    if min(item.success_count, item.failure_count) < 0:
        raise ValidationError("outcome counts must not be negative.", code="bad_counts")


def _build(user: User, item: ImportedMemory) -> MemoryDoc:
    """The document (text, confidence and steps cleaned as ``memory_write`` cleans them)."""
    when = item.timestamp
    doc = MemoryDoc(
        id=next_memory_id(),  # derived inside ``replayable(seed)``, random otherwise
        tenant_id=user.memory_tenant_id,
        user_id=user.memory_id,
        memory_type=item.memory_type,  # type: ignore[arg-type]
        text=clean_text(item.text),
        created_at=when,
        timestamp=when,
        confidence=clean_confidence(item.confidence),
        source=item.source,
        tags=list(item.tags),
        metadata=clean_metadata(dict(item.metadata)),
        session_id=item.session_id,
        agent=item.agent,
        fact_type=item.fact_type,
        supporting_episode_ids=list(item.supporting_episode_ids),
        valid_from=item.valid_from,
        valid_to=item.valid_to,
        last_used_at=when if item.memory_type == "semantic" else None,
        name=item.name,
        description=item.description,
        trigger=item.trigger,
        success_count=item.success_count,
        failure_count=item.failure_count,
    )
    if item.memory_type == "procedural":
        doc.steps = _clean_steps(item.steps)
    return doc


def memory_import(*, user: User, memories: Sequence[ImportedMemory]) -> list[MemoryDoc]:
    """Write ``memories`` as ``user``'s, with their own times; the documents, in order.

    A turn without a ``session_id`` gets one by the live rule over the batch's turns
    (``sessions.sessions_assign``: inferred, ``ATLAS_SESSION_GAP_S``). A turn's lexical
    context comes from its session neighbours in the batch
    (``turn_context.with_lexical_context``). Everything is validated before anything is
    written; the ids are random, or derived from the seed inside ``replayable(seed)``, as
    every write's (the same import under the same seed makes the same ids: the lab's eval
    is repeatable by it); the texts are embedded in one batch
    (as ``memory_write`` and a turn embed them: ``embedding_text``), outside any transaction,
    then written ``WRITE_BATCH`` at a time (one refresh per batch). One audit event counts
    what was imported, per type (never any text)."""
    docs = [_doc(user, item, n) for n, item in enumerate(memories, start=1)]
    if not docs:
        return []
    sessions_assign(docs)
    previous = previous_turns(docs)
    for doc, before, after in zip(docs, previous, next_turns(docs), strict=True):
        with_lexical_context(doc, before, after)
    texts = [
        turn_embedding_text(d, before)
        if d.memory_type == "episodic"
        else embedding_text(d.memory_type, d.text, name=d.name, trigger=d.trigger)
        for d, before in zip(docs, previous, strict=True)
    ]
    with store_errors():
        vectors = embedder().embed(texts)
        for doc, vector in zip(docs, vectors, strict=True):
            doc.embedding = [float(x) for x in vector]
        for start in range(0, len(docs), WRITE_BATCH):
            backend().write(docs[start : start + WRITE_BATCH])
    counts = {kind: sum(d.memory_type == kind for d in docs) for kind in PERSONAL_TYPES}
    with transaction.atomic():
        audit_record(
            action="memory.import",
            tenant=user.tenant,
            subject_user=user,
            metadata={"count": len(docs), **{k: n for k, n in counts.items() if n}},
        )
    return docs
