"""Hybrid recall: lexical + dense legs, RRF fusion, rerank within a budget, usage bookkeeping."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings

from atlas_platform.exceptions import ValidationError
from memory import bookkeeping
from memory.engine.types import (
    PERSONAL_TYPES,
    LegHit,
    LegQuery,
    MemoryDoc,
    MemoryType,
    RecallFilter,
)
from memory.fusion import rrf
from memory.query import TimeWindow, parse_time_window
from memory.rerank import default_reranker, rerank
from memory.scoping import tenant_ranking, user_read_scope
from memory.services.common import backend, clean_text, embedder, store_errors
from memory.services.common import now as clock_now
from tenants.models import User

LEGS = ("lexical", "dense")


@dataclass
class RecallHit:
    doc: MemoryDoc
    score: float  # the fused (RRF) score
    rank: int
    leg_ranks: dict[str, int] = field(default_factory=dict)


@dataclass
class RecallResult:
    hits: list[RecallHit]
    legs: list[str]
    reranker: str | None
    reranked: bool
    timings_ms: dict[str, float]
    took_ms: float
    time_window: TimeWindow | None = None  # read from the query; fed a time-filtered leg


def _types(memory_types: Sequence[str] | None) -> tuple[MemoryType, ...]:
    if memory_types is None:
        return PERSONAL_TYPES
    unknown = sorted(set(memory_types) - set(PERSONAL_TYPES))
    if unknown:
        raise ValidationError(
            f"Unknown memory types: {', '.join(unknown)} (use episodic, semantic, procedural).",
            code="bad_memory_type",
        )
    return tuple(t for t in PERSONAL_TYPES if t in memory_types)


def memory_recall(
    *,
    user: User,
    query: str,
    k: int = 10,
    memory_types: Sequence[str] | None = None,
    include_catalog: bool = True,
    include_superseded: bool = False,
    since: datetime | None = None,
    until: datetime | None = None,
    legs: Sequence[str] = LEGS,
    use_reranker: bool = True,
    apply_decay: bool = True,
    exclude_ids: Sequence[str] = (),
    time_hints: bool = True,
    record_usage: bool = True,
    now: datetime | None = None,
    lexical_weight: float | None = None,
) -> RecallResult:
    """Recall the user's memories (and their tenant's catalog) most relevant to ``query``.

    A time expression in the query ("last March", "two weeks ago") adds a time-filtered run of
    the same legs to the fusion (``time_hints``): memories from that window rank higher, none
    are dropped. ``now`` is the instant recall runs as (decay, time expressions; the evaluation
    pins it); ``record_usage=False`` leaves use counts alone (a read-only recall).
    ``lexical_weight`` (default ``ATLAS_RECALL_LEXICAL_WEIGHT``) weighs the lexical legs in
    the fusion against the dense ones (docs/recall-quality.md has the measurements).
    """
    query = clean_text(query, field="query")
    if not 1 <= k <= settings.ATLAS_RECALL_MAX_K:
        raise ValidationError(
            f"k must be between 1 and {settings.ATLAS_RECALL_MAX_K}.", code="bad_k"
        )
    if since and until and since > until:
        raise ValidationError("since must not be after until.", code="bad_time_range")
    if not legs or set(legs) - set(LEGS):
        raise ValidationError("legs must be a non-empty subset of lexical, dense.", code="bad_legs")
    scope = user_read_scope(user)
    moment = now or clock_now()
    types = _types(memory_types)
    window = parse_time_window(query, moment) if time_hints and not (since or until) else None
    started = time.perf_counter()
    timings: dict[str, float] = {}
    with store_errors():
        vector = embedder().embed_one(query) if "dense" in legs else None
        timings["embed_ms"] = _since(started)
        leg_query = LegQuery(
            text=query,
            vector=vector,
            filter=RecallFilter(
                memory_types=types,
                include_catalog=include_catalog,
                include_superseded=include_superseded,
                since=since,
                until=until,
            ),
            ranking=tenant_ranking(user.tenant, apply_decay=apply_decay),
            now=moment,
            size=settings.ATLAS_RECALL_CANDIDATES,
            lexical="lexical" in legs,
            dense="dense" in legs,
        )
        mark = time.perf_counter()
        results = backend().recall_legs(scope, leg_query)
        fusion_legs: dict[str, list[LegHit]] = {
            "lexical": results.lexical,
            "dense": results.dense,
        }
        if window is not None:
            windowed = backend().recall_legs(scope, _windowed(leg_query, window))
            fusion_legs.update(lexical_time=windowed.lexical, dense_time=windowed.dense)
        timings["legs_ms"] = _since(mark)
    mark = time.perf_counter()
    excluded = set(exclude_ids)
    if lexical_weight is None:
        lexical_weight = settings.ATLAS_RECALL_LEXICAL_WEIGHT
    weights = {"lexical": lexical_weight, "lexical_time": lexical_weight}
    fused = [f for f in rrf(fusion_legs, weights=weights) if f.doc.id not in excluded]
    timings["fuse_ms"] = _since(mark)
    reranker = default_reranker() if use_reranker else None
    outcome = rerank(
        reranker, query, [f.doc.text for f in fused], budget_ms=settings.ATLAS_RERANK_BUDGET_MS
    )
    timings["rerank_ms"] = outcome.took_ms
    chosen = [fused[i] for i in outcome.order[:k]]
    hits = [
        RecallHit(doc=f.doc, score=round(f.score, 6), rank=n, leg_ranks=f.leg_ranks)
        for n, f in enumerate(chosen, start=1)
    ]
    if record_usage:
        bookkeeping.bump_usage([h.doc for h in hits if h.doc.memory_type == "semantic"])
    return RecallResult(
        hits=hits,
        legs=[leg for leg in LEGS if leg in legs],
        reranker=outcome.reranker,
        reranked=outcome.reranked,
        timings_ms=timings,
        took_ms=_since(started),
        time_window=window,
    )


def _windowed(leg_query: LegQuery, window: TimeWindow) -> LegQuery:
    """The same legs restricted to the window (personal memories only: the catalog is
    timeless)."""
    flt = leg_query.filter
    return dataclasses.replace(
        leg_query,
        filter=dataclasses.replace(
            flt, include_catalog=False, since=window.start, until=window.end
        ),
    )


def _since(mark: float) -> float:
    return round((time.perf_counter() - mark) * 1000.0, 2)
