"""Searchable documents another app keeps for a user (the knowledge graph's entities): stored
in the memory store as ``entity`` documents, searched with the same two legs (lexical +
dense), the tenant's decay (on ``timestamp``) and the same isolation as memories (a ``dls``
tenant's reads run with the owner's scoped key), erased with the user.

They are never part of memory recall (``memory_recall`` searches the personal types only),
never read as a memory (``memory_get`` answers 404 for one) and carry no audit event of their
own: the app that keeps them audits its own change (their text never goes into audit).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memory.engine.types import ENTITY, LegQuery, MemoryDoc, RecallFilter
from memory.fusion import rank_score, rrf
from memory.services.common import backend, embedder, store_errors
from memory.services.common import now as clock_now
from memory.services.scoping import tenant_ranking, user_read_scope
from tenants.models import User

MAX_TEXT = 300_000
MAX_CANDIDATES = 1000


@dataclass(frozen=True)
class SearchableHit:
    """One document a search found: its id, fused score and rank (and, when read, the stored
    document)."""

    id: str
    score: float
    rank: int
    doc: MemoryDoc | None = None
    leg_ranks: dict[str, int] = field(default_factory=dict)


def searchable_embed(*, texts: Sequence[str]) -> list[list[float]]:
    """The embedder's vectors for ``texts`` (documents, not queries), normalised."""
    if not texts:
        return []
    with store_errors():
        return [[float(x) for x in row] for row in embedder().embed(list(texts))]


def searchable_put(
    *,
    user: User,
    doc_id: str,
    text: str,
    timestamp: datetime,
    embedding: list[float] | None = None,
    title: str = "",
    tags: Sequence[str] = (),
    metadata: dict[str, Any] | None = None,
) -> None:
    """Store (or replace) the user's searchable document ``doc_id``; visible to the next
    search. ``embedding`` when the caller already computed it (else it is computed here)."""
    text = text[:MAX_TEXT]
    with store_errors():
        vector = embedding if embedding is not None else embedder().embed_one(text)
        doc = MemoryDoc(
            id=doc_id,
            tenant_id=user.memory_tenant_id,
            user_id=user.memory_id,
            memory_type=ENTITY,
            text=text,
            name=title[:500] or None,
            created_at=timestamp,
            timestamp=timestamp,
            embedding=vector,
            source="agent",
            tags=list(tags),
            metadata=dict(metadata or {}),
        )
        backend().write([doc])


def searchable_delete(*, user: User, doc_ids: Sequence[str]) -> list[str]:
    """Hard-delete those of ``doc_ids`` that are the user's searchable documents; the ids
    deleted (ids already gone are skipped, so a retry is harmless)."""
    if not doc_ids:
        return []
    with store_errors():
        return backend().delete_ids(
            tenant_id=user.memory_tenant_id,
            user_id=user.memory_id,
            memory_type=ENTITY,
            ids=list(doc_ids),
        )


def searchable_search(
    *,
    user: User,
    query: str,
    candidates: int = 200,
    read: bool = True,
    now: datetime | None = None,
    among: Sequence[str] | None = None,
) -> list[SearchableHit]:
    """The user's searchable documents for ``query``: lexical and dense legs of up to
    ``candidates`` each (tenant decay on the document's ``timestamp``), fused by reciprocal
    rank, best first; with ``read`` each with its stored document (a caller that keeps its own
    rows by document id passes ``read=False`` and skips that read). ``user`` is the
    documents' owner: the caller decides who may read them (a team-visible project's owner,
    for a teammate) and passes them as ``among``: only those are ranked, so neither a score
    nor a cut-off says anything about the owner's other documents."""
    if among is not None and not among:
        return []
    size = max(1, min(int(candidates), MAX_CANDIDATES))
    scope = user_read_scope(user)
    with store_errors():
        vector = embedder().embed_query(query)
        legs = backend().recall_legs(
            scope,
            LegQuery(
                text=query,
                vector=vector,
                filter=RecallFilter(
                    memory_types=(ENTITY,),
                    include_catalog=False,
                    ids=None if among is None else tuple(among),
                ),
                ranking=tenant_ranking(user.tenant),
                now=now or clock_now(),
                size=size,
            ),
        )
        fused = rrf({"lexical": legs.lexical, "dense": legs.dense})
        if not read:
            return [
                SearchableHit(id=f.id, score=rank_score(f.leg_ranks), rank=n, leg_ranks=f.leg_ranks)
                for n, f in enumerate(fused, start=1)
            ]
        docs = {d.id: d for d in backend().get_many(scope, [f.id for f in fused])}
    return [
        SearchableHit(
            id=f.id, score=rank_score(f.leg_ranks), rank=n, doc=docs[f.id], leg_ranks=f.leg_ranks
        )
        for n, f in enumerate((f for f in fused if f.id in docs), start=1)
    ]


def searchable_count(*, user: User) -> int:
    """How many searchable documents the user has in the store (a reindex check)."""
    with store_errors():
        return backend().count_ids(
            tenant_id=user.memory_tenant_id, user_id=user.memory_id, memory_type=ENTITY, among=None
        )
