"""Searchable documents another app keeps for a user (the knowledge graph's entities): stored
in the memory store as ``entity`` documents, searched with the same two legs (lexical +
dense), the tenant's decay (on ``timestamp``) and the same isolation as memories (a ``dls``
tenant's reads run with the owner's scoped key), erased with the user.

They are never part of memory recall (``memory_recall`` searches the personal types only),
never read as a memory (``memory_get`` answers 404 for one) and carry no audit event of their
own: the app that keeps them audits its own change (their text never goes into audit).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memory.engine.types import ENTITY, LegQuery, MemoryDoc, RecallFilter
from memory.errors import MemoryStoreUnavailable
from memory.fusion import rank_score, rrf
from memory.services.common import backend, embedder, store_errors
from memory.services.common import now as clock_now
from memory.services.scoping import tenant_ranking, user_read_scope
from tenants.models import User

logger = logging.getLogger(__name__)

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


# How many of a block's texts one model call embeds (``_Together.vectors``).
TOGETHER_CHUNK = 32


@dataclass
class _Together:
    """A ``searchable_writes_together`` block: its texts in order, embedded on demand (the first
    text asked for together with the ones after it, a chunk per model call), and the documents
    held for its one store write (each with what to do once it is stored)."""

    waiting: list[str]
    ahead: dict[str, list[float]] = field(default_factory=dict)
    held: list[tuple[MemoryDoc, Callable[[], object] | None]] = field(default_factory=list)

    def vectors(self, texts: Sequence[str]) -> list[list[float]] | None:
        """The vectors of ``texts`` when they are all the block's (None: not the block's),
        embedding the waiting ones asked for and those that follow them. A text never asked
        for (an upsert of unchanged content needs none) is never embedded."""
        keys = [t[:MAX_TEXT] for t in texts]
        if not all(k in self.ahead or k in self.waiting for k in keys):
            return None
        missing = [k for k in keys if k not in self.ahead]
        if missing:
            start = min(self.waiting.index(k) for k in missing)
            chunk = list(dict.fromkeys([*missing, *self.waiting[start : start + TOGETHER_CHUNK]]))
            with store_errors():
                rows = embedder().embed(chunk)
            self.ahead.update({t: [float(x) for x in v] for t, v in zip(chunk, rows, strict=True)})
            self.waiting = [t for t in self.waiting if t not in self.ahead]
        return [list(self.ahead[k]) for k in keys]


_together: contextvars.ContextVar[_Together | None] = contextvars.ContextVar(
    "atlas_searchable_together", default=None
)


@contextlib.contextmanager
def searchable_writes_together(texts: Sequence[str]) -> Iterator[None]:
    """Searchable writes done inside the block, as one: ``texts`` embedded together, in as
    few model calls as the ones asked for allow (``searchable_embed`` of one of them inside the
    block embeds it with the texts after it; a text nobody asks for is never embedded), the
    documents ``searchable_put`` gets held and written in one store call (one refresh) when
    the block ends, then each put's ``on_written``. A put is not searchable before the block
    ends. If that write fails (the store is down), no ``on_written`` runs and the error is
    logged, not raised: the caller's reindex catches up, as after a single put that failed."""
    block = _Together(list(dict.fromkeys(t[:MAX_TEXT] for t in texts)))
    token = _together.set(block)
    try:
        yield
    finally:
        _together.reset(token)
    if not block.held:
        return
    try:
        with store_errors():
            backend().write([doc for doc, _ in block.held])
    except MemoryStoreUnavailable:
        logger.warning("searchable batch deferred", extra={"documents": len(block.held)})
        return
    for _, on_written in block.held:
        if on_written is not None:
            on_written()


def searchable_embed(*, texts: Sequence[str]) -> list[list[float]]:
    """The embedder's vectors for ``texts`` (documents, not queries), normalised (inside a
    ``searchable_writes_together`` block, the ones embedded ahead are not embedded again)."""
    if not texts:
        return []
    block = _together.get()
    found = block.vectors(texts) if block is not None else None
    if found is not None:
        return found
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
    on_written: Callable[[], object] | None = None,
) -> None:
    """Store (or replace) the user's searchable document ``doc_id``; visible to the next
    search. ``embedding`` when the caller already computed it (else it is computed here).
    ``on_written``: run once it is stored (inside ``searchable_writes_together``: when the
    block's one write is done)."""
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
        block = _together.get()
        if block is not None:
            block.held.append((doc, on_written))
            return
        backend().write([doc])
    if on_written is not None:
        on_written()


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
