"""Hybrid recall: lexical + dense legs, RRF fusion, rerank within a budget, usage bookkeeping."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np
from django.conf import settings

from atlas_platform.config import RecallSettings
from atlas_platform.exceptions import ValidationError
from memory.engine.types import (
    PERSONAL_TYPES,
    LegHit,
    LegQuery,
    MemoryDoc,
    MemoryType,
    Ranking,
    ReadScope,
    RecallFilter,
    SessionTurn,
)
from memory.fusion import (
    Fused,
    cap_per_session,
    credit_successors,
    leg_confidence,
    rrf,
    spread_to_neighbours,
    turn_prior,
)
from memory.plans import DEFAULT_PLAN, LEGS, RecallPlan, ResolvedPlan, resolve_plan
from memory.query import TimeWindow, feedback_terms, parse_time_window, without_time_phrase
from memory.rerank import default_reranker, rerank
from memory.services import bookkeeping
from memory.services.common import backend, clean_project, clean_text, embedder, store_errors
from memory.services.common import now as clock_now
from memory.services.recall_stats import recall_stat_note
from memory.services.scoping import tenant_ranking, user_read_scope
from tenants.models import User


@dataclass
class RecallHit:
    doc: MemoryDoc
    score: float  # the fused (RRF) score
    rank: int
    leg_ranks: dict[str, int] = field(default_factory=dict)
    leg_scores: dict[str, float] = field(default_factory=dict)  # each leg's own score


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
    exclude_ids: Sequence[str] = (),
    vector: list[float] | None = None,
    track_usage: bool = True,
    now: datetime | None = None,
    plan: RecallPlan = DEFAULT_PLAN,
    project: str | None = None,
    include_unscoped: bool = False,
) -> RecallResult:
    """Recall the user's memories (and their tenant's catalog) most relevant to ``query``.

    ``plan`` says how (``RecallPlan``; the default is the product's recall), resolved once
    against the deployment's settings (``resolve_plan``). A time expression in the query
    ("last March", "two weeks ago") adds a time-filtered run of the same legs to the fusion
    (``plan.time_hints``): memories from that window rank higher, none are dropped. ``now`` is
    the instant recall runs as (decay, time expressions; the evaluation pins it).

    A superseded fact's match counts for the fact that replaced it (``plan.succession``,
    ``memory.fusion.credit_successors``): the legs search superseded facts too, and fusion
    gives each such hit to its successor, so "which version is my phone on now?" finds the new
    version through the old fact's wording. Superseded facts are still never returned unless
    ``include_superseded``; not done within an explicit ``since`` / ``until`` range (the
    successor may lie outside it).

    ``vector`` is the query's embedding when the caller already holds it (a turn embeds the
    same words to store them), so it is not computed twice. The platform's own reads
    (consolidation, the evaluation, an operator in the admin's memory inspector) pass
    ``track_usage=False``: the same recall, but it neither bumps the usage of what it returns
    nor counts in the tenant's recall statistics.

    ``project`` scopes the personal memories to those written from that project (an agents
    project key; ``MemoryDoc.project``), with ``include_unscoped`` also those written from no
    project; the catalog is not affected. A project-scoped recall does not spread to session
    neighbours (a neighbour turn need not be of the project).

    The steps, each below: parse, read the time, embed, legs, fuse, spread, prior, read,
    rerank, note (docs/recall-quality.md, "How recall works").
    """
    config: RecallSettings = settings.ATLAS_RECALL
    resolved = resolve_plan(plan, config)
    ask = _parse(
        query=query,
        k=k,
        max_k=config.max_k,
        memory_types=memory_types,
        include_catalog=include_catalog,
        include_superseded=include_superseded,
        since=since,
        until=until,
        exclude_ids=exclude_ids,
        project=project,
        include_unscoped=include_unscoped,
        plan=resolved,
    )
    scope = user_read_scope(user)
    moment = now or clock_now()
    started = time.perf_counter()
    timings: dict[str, float] = {}
    with store_errors():
        anchor, window = _read_time(scope, ask, resolved, moment)
        with _timed(timings, "embed_ms"):
            vector = _embed(ask, resolved, window, vector)
        leg_query = _leg_query(user, ask, resolved, anchor, vector)
        with _timed(timings, "legs_ms"):
            legs = _legs(scope, leg_query, window, resolved)
    with _timed(timings, "fuse_ms"):
        if ask.credit:  # the spread below reads the credited legs too
            legs = credit_successors(legs)
        fused = _fuse(legs, ask, resolved)
    if resolved.feedback and fused:
        with _timed(timings, "feedback_ms"):
            legs = _feedback_legs(scope, fused, legs, leg_query, resolved)
            if ask.credit:
                legs = credit_successors(legs)
            fused = _fuse(legs, ask, resolved)
    sessions = _sessions(legs)
    if _spreads(fused, ask, resolved):
        with _timed(timings, "spread_ms"):
            fused = _spread(scope, fused, legs, ask, resolved, sessions)
    reranker = default_reranker() if resolved.rerank else None
    depth = None if reranker else ask.k  # a reranker reads every candidate
    read: dict[str, MemoryDoc | None] = {}
    if _priors(fused, ask, resolved):
        with _timed(timings, "prior_ms"):
            fused, read = _prior(scope, fused, depth, resolved)
    fused = cap_per_session(fused, sessions, cap=resolved.session_cap, head=ask.k)
    with _timed(timings, "read_ms"):
        # Only the head of the fused list, or every candidate for a reranker.
        candidates = _with_docs(scope, fused, depth, ask.include_superseded, read)
    outcome = rerank(
        reranker, ask.query, [doc.text for _, doc in candidates], budget_ms=config.rerank_budget_ms
    )
    timings["rerank_ms"] = outcome.took_ms
    hits = _hits([candidates[i] for i in outcome.order[: ask.k]])
    took_ms = _since(started)
    if track_usage:
        _note(user, hits, took_ms)
    return RecallResult(
        hits=hits,
        legs=[leg for leg in LEGS if leg in resolved.legs],
        reranker=outcome.reranker,
        reranked=outcome.reranked,
        timings_ms=timings,
        took_ms=took_ms,
        time_window=window,
    )


@dataclass(frozen=True)
class _Ask:
    """What the caller asked, checked and cleaned (``_parse``)."""

    query: str
    k: int
    types: tuple[MemoryType, ...]
    include_catalog: bool
    include_superseded: bool
    since: datetime | None
    until: datetime | None
    excluded: frozenset[str]
    project: str | None
    include_unscoped: bool
    credit: bool  # superseded hits count for their successors (RecallPlan.succession)


def _parse(
    *,
    query: str,
    k: int,
    max_k: int,
    memory_types: Sequence[str] | None,
    include_catalog: bool,
    include_superseded: bool,
    since: datetime | None,
    until: datetime | None,
    exclude_ids: Sequence[str],
    project: str | None,
    include_unscoped: bool,
    plan: ResolvedPlan,
) -> _Ask:
    """The request checked (400s that say what to fix) before anything is read."""
    query = clean_text(query, field="query")
    project = clean_project(project)
    if not 1 <= k <= max_k:
        raise ValidationError(f"k must be between 1 and {max_k}.", code="bad_k")
    if since and until and since > until:
        raise ValidationError("since must not be after until.", code="bad_time_range")
    return _Ask(
        query=query,
        k=k,
        types=_types(memory_types),
        include_catalog=include_catalog,
        include_superseded=include_superseded,
        since=since,
        until=until,
        excluded=frozenset(exclude_ids),
        project=project,
        include_unscoped=include_unscoped,
        # Not within an explicit time range: the successor may lie outside it.
        credit=plan.succession and not include_superseded and since is None and until is None,
    )


def _read_time(
    scope: ReadScope, ask: _Ask, plan: ResolvedPlan, moment: datetime
) -> tuple[datetime, TimeWindow | None]:
    """The instant time words and decay are read against, and the window a time expression
    in the query names (none inside an explicit ``since`` / ``until``)."""
    anchor = _time_anchor(scope, moment) if plan.time_anchor == "history" else moment
    asks_window = plan.time_hints and not (ask.since or ask.until)
    return anchor, parse_time_window(ask.query, anchor) if asks_window else None


def _embed(
    ask: _Ask, plan: ResolvedPlan, window: TimeWindow | None, vector: list[float] | None
) -> list[float] | None:
    """The query's vector for the dense legs (the caller's, when it holds one)."""
    if not plan.dense:
        return None
    if vector is not None:
        return vector
    text = without_time_phrase(ask.query, window) if plan.strip_time_phrase else ask.query
    return embedder().embed_query(text)


def _leg_query(
    user: User, ask: _Ask, plan: ResolvedPlan, anchor: datetime, vector: list[float] | None
) -> LegQuery:
    return LegQuery(
        text=ask.query,
        vector=vector,
        filter=RecallFilter(
            memory_types=ask.types,
            include_catalog=ask.include_catalog,
            include_superseded=ask.include_superseded or ask.credit,
            # Archived facts only when asked for (successor credit reads the hot index only).
            include_archived=ask.include_superseded,
            since=ask.since,
            until=ask.until,
            project=ask.project,
            include_unscoped=ask.include_unscoped,
        ),
        ranking=_ranking(user, plan),
        now=anchor,
        size=plan.candidates,
        lexical=plan.lexical,
        dense=plan.dense,
        context_boost=plan.context_boost,
    )


def _legs(
    scope: ReadScope, leg_query: LegQuery, window: TimeWindow | None, plan: ResolvedPlan
) -> dict[str, list[LegHit]]:
    """Each leg's ranked hits: the main legs, and with a time window the same legs inside it
    (``lexical_time``, ``dense_time``)."""
    main = backend().recall_legs(scope, leg_query)
    legs = {"lexical": main.lexical, "dense": main.dense}
    if window is not None:
        timed = backend().recall_legs(scope, _windowed(leg_query, window, decay=plan.window_decay))
        legs.update(lexical_time=timed.lexical, dense_time=timed.dense)
    return legs


def _fuse(legs: dict[str, list[LegHit]], ask: _Ask, plan: ResolvedPlan) -> list[Fused]:
    """Reciprocal rank fusion, the lexical legs weighed by the plan; the excluded ids
    dropped."""
    weights = {
        leg: leg_confidence(legs[leg])
        if plan.lexical_weight == "confidence"
        else float(plan.lexical_weight)
        for leg in ("lexical", "lexical_time")
        if leg in legs
    }
    weights.update({leg: plan.feedback_weight for leg in FEEDBACK_LEGS if leg in legs})
    fused = rrf(legs, weights=weights, rank_constant=plan.rank_constant)
    return [f for f in fused if f.id not in ask.excluded]


def _spreads(fused: list[Fused], ask: _Ask, plan: ResolvedPlan) -> bool:
    """Whether the session spread runs: on, episodes asked for, something fused, and not a
    project-scoped recall (a neighbour turn need not be of the project)."""
    on = plan.session_spread > 0 and plan.session_depth > 0
    return on and "episodic" in ask.types and bool(fused) and ask.project is None


def _spread(
    scope: ReadScope,
    fused: list[Fused],
    legs: dict[str, list[LegHit]],
    ask: _Ask,
    plan: ResolvedPlan,
    sessions: dict[str, str],
) -> list[Fused]:
    """The fused head's turns lend a share of their score to their session neighbours
    (``memory.fusion.spread_to_neighbours``), read with the asker's own credential. A
    neighbour's session (its lender's) is added to ``sessions``."""
    turns = {
        hit.id: SessionTurn(id=hit.id, session_id=hit.session_id, timestamp=hit.timestamp)
        for hits in legs.values()
        for hit in hits
        if hit.session_id and hit.timestamp
    }
    head = [turns[f.id] for f in fused[:SPREAD_HEAD] if f.id in turns]
    with store_errors():
        around = backend().session_neighbours(
            scope, head, depth=plan.session_depth, since=ask.since, until=ask.until
        )
    for lender, near in around.items():
        for neighbour in (*near.before, *near.after):
            sessions.setdefault(neighbour, turns[lender].session_id)
    spread = spread_to_neighbours(fused, around, weight=plan.session_spread)
    return [f for f in spread if f.id not in ask.excluded]


def _priors(fused: list[Fused], ask: _Ask, plan: ResolvedPlan) -> bool:
    """Whether the turn prior runs: on, episodes asked for, and something fused."""
    return plan.turn_prior != 1.0 and "episodic" in ask.types and bool(fused)


def _prior(
    scope: ReadScope, fused: list[Fused], k: int | None, plan: ResolvedPlan
) -> tuple[list[Fused], dict[str, MemoryDoc | None]]:
    """The fused list with the turn prior applied to the turns among the documents the read
    step reads (``_head``), and what that read found (``None``: gone since the legs): read
    here, once, so the prior costs no extra read (a head of 30 was measured too: the same
    ranks)."""
    head = _head(fused, k)
    with store_errors():
        docs = {d.id: d for d in backend().get_many(scope, [f.id for f in head])}
    turns = {i: d.text for i, d in docs.items() if d.memory_type == "episodic"}
    return turn_prior(fused, turns, factor=plan.turn_prior), {f.id: docs.get(f.id) for f in head}


def _sessions(legs: dict[str, list[LegHit]]) -> dict[str, str]:
    """The session of every turn a leg found (``cap_per_session`` reads it)."""
    return {hit.id: hit.session_id for hits in legs.values() for hit in hits if hit.session_id}


# The legs pseudo-relevance feedback adds (``_feedback_legs``), weighed by the plan's
# ``feedback_weight``.
FEEDBACK_LEGS = ("lexical_feedback", "dense_feedback")


def _feedback_legs(
    scope: ReadScope,
    fused: list[Fused],
    legs: dict[str, list[LegHit]],
    leg_query: LegQuery,
    plan: ResolvedPlan,
) -> dict[str, list[LegHit]]:
    """``legs`` plus legs fed by the first pass's best hits (pseudo-relevance feedback), read
    with the asker's own scope, so feedback only ever reads what the asker could be shown:

    - lexical: their words the query lacks, searched with the query (a second lexical leg);
    - dense: the query vector moved towards their stored vectors (Rocchio), then the first
      pass's candidates ranked by it (their stored vectors: one small read, no second scan
      and no model call), so it reorders what the legs found rather than finding more."""
    head = [f.id for f in fused[: plan.feedback_docs]]
    more: dict[str, list[LegHit]] = {}
    if plan.lexical and plan.feedback_terms > 0:
        with store_errors():
            docs = backend().get_many(scope, head)
        terms = feedback_terms(
            leg_query.text, [d.text for d in docs if d.text], limit=plan.feedback_terms
        )
        if terms:
            fed = dataclasses.replace(
                leg_query, text=" ".join([leg_query.text, *terms]), lexical=True, dense=False
            )
            with store_errors():
                more["lexical_feedback"] = backend().recall_legs(scope, fed).lexical
    if plan.dense and plan.feedback_dense > 0.0 and leg_query.vector is not None:
        more["dense_feedback"] = _dense_feedback(scope, head, legs, leg_query.vector, plan)
    return {**legs, **more} if any(more.values()) else legs


def _dense_feedback(
    scope: ReadScope,
    head: list[str],
    legs: dict[str, list[LegHit]],
    vector: list[float],
    plan: ResolvedPlan,
) -> list[LegHit]:
    """The candidates of ``legs`` ranked by cosine to the query vector plus
    ``feedback_dense`` times the mean of ``head``'s stored vectors, unit length (two small
    reads: the head's vectors, then the candidates' scores, computed by the store)."""
    found = {hit.id: hit for hits in legs.values() for hit in hits}
    with store_errors():
        fed = list(backend().vectors(scope, head).values())
    if not fed:
        return []
    query = np.asarray(vector, dtype=np.float64)
    moved = query + plan.feedback_dense * np.asarray(fed, dtype=np.float64).mean(axis=0)
    norm = float(np.linalg.norm(moved))
    if norm <= 0.0:
        return []
    with store_errors():
        scores = backend().similarities(scope, list(found), (moved / norm).tolist())
    ranked = sorted((i for i in found if i in scores), key=lambda i: -scores[i])  # stable
    return [
        dataclasses.replace(found[i], score=scores[i], rank=rank)
        for rank, i in enumerate(ranked, start=1)
    ]


def _hits(chosen: list[tuple[Fused, MemoryDoc]]) -> list[RecallHit]:
    return [
        RecallHit(
            doc=doc,
            score=round(f.score, 6),
            rank=n,
            leg_ranks=f.leg_ranks,
            leg_scores=f.leg_scores,
        )
        for n, (f, doc) in enumerate(chosen, start=1)
    ]


def _note(user: User, hits: list[RecallHit], took_ms: float) -> None:
    """Usage bookkeeping: the returned facts' use counts, and the tenant's statistics."""
    bookkeeping.bump_usage([h.doc for h in hits if h.doc.memory_type == "semantic"])
    recall_stat_note(tenant_id=user.tenant_id, took_ms=took_ms, at=clock_now())


@contextmanager
def _timed(timings: dict[str, float], name: str) -> Iterator[None]:
    """``timings[name]``: the block's wall time in ms."""
    mark = time.perf_counter()
    yield
    timings[name] = _since(mark)


# The fused head whose turns lend to their session neighbours (spread_to_neighbours): a page
# and then some, two bounded reads per turn on Elasticsearch.
SPREAD_HEAD = 20

# Read a few more than k: a document forgotten (or superseded) between the legs and the read
# drops out, and the next one takes its place.
READ_SPARE = 5


def _head(fused: list[Fused], k: int | None) -> list[Fused]:
    """What recall reads of the fused list: the first ``k`` + spares, or all (``k`` None)."""
    return fused if k is None else fused[: k + READ_SPARE]


def _with_docs(
    scope: ReadScope,
    fused: list[Fused],
    k: int | None,
    include_superseded: bool,
    known: dict[str, MemoryDoc | None] | None = None,
) -> list[tuple[Fused, MemoryDoc]]:
    """The fused candidates (the first ``k`` + spares, or all) with their documents, read in
    one request under the same read scope (those in ``known``, read by this recall already,
    are not read again; ``None`` there: not found)."""
    head = _head(fused, k)
    read: dict[str, MemoryDoc | None] = dict(known or {})
    missing = [f.id for f in head if f.id not in read]
    if missing:
        with store_errors():
            read.update({d.id: d for d in backend().get_many(scope, missing)})
    pairs = []
    for f in head:
        doc = read.get(f.id)
        if doc is not None and (include_superseded or doc.superseded_by is None):
            pairs.append((f, doc))
    return pairs


# A history whose newest memory is older than this is read as of that memory, not the clock.
ANCHOR_GAP = timedelta(days=14)


def _time_anchor(scope: ReadScope, moment: datetime) -> datetime:
    """The instant time words and decay are read against: ``moment`` (the clock), or, when
    the user's newest episode or fact is more than ``ANCHOR_GAP`` older (a history imported
    with its own dates, a conversation that ended), the end of that newest memory's day:
    "in May" and "recently" then mean that history's May and its last weeks, and decay ranks
    its memories by age within it instead of burying all of them alike.

    A user found to have a recent memory keeps the clock for ``ANCHOR_CACHE_S`` without a
    read: a write only makes the newest memory newer, so that answer cannot go stale by
    writing (a forget of the newest can, for that long). A user without one is read every
    time, so a first turn after weeks of silence moves the anchor at once."""
    key = (scope.tenant_id, scope.user_id)
    seen = _recent_newest.get(key)
    if (
        seen is not None
        and time.monotonic() - seen[0] < ANCHOR_CACHE_S
        and moment - seen[1] <= ANCHOR_GAP
    ):
        return moment
    newest = backend().newest_timestamp(scope)
    if newest is None or moment - newest <= ANCHOR_GAP:
        if newest is not None:
            if len(_recent_newest) >= ANCHOR_CACHE_SIZE:
                _recent_newest.clear()
            _recent_newest[key] = (time.monotonic(), newest)
        return moment
    return min(moment, newest.replace(hour=23, minute=59, second=59, microsecond=0))


# A live user's newest memory is recent, and reading it on every recall costs an aggregation
# (about 8 ms on Elasticsearch here, 20 ms embedded at 10k memories): kept for a minute.
ANCHOR_CACHE_S = 60.0
ANCHOR_CACHE_SIZE = 10_000
_recent_newest: dict[tuple[str, str | None], tuple[float, datetime]] = {}


def _ranking(user: User, plan: ResolvedPlan) -> Ranking:
    """The tenant's ranking signals, with the plan's decay overrides."""
    ranking = tenant_ranking(user.tenant, apply_decay=plan.decay)
    if plan.decay_offset_days is not None:
        ranking = dataclasses.replace(ranking, decay_offset_days=float(plan.decay_offset_days))
    if plan.decay_scale_days is not None:
        ranking = dataclasses.replace(ranking, decay_scale_days=float(plan.decay_scale_days))
    return ranking


def _windowed(leg_query: LegQuery, window: TimeWindow, *, decay: bool = True) -> LegQuery:
    """The same legs restricted to the window (personal memories only: the catalog is
    timeless). Without ``decay``, the window's memories rank by match alone: the question
    asked about that time, so their age is no reason to rank them lower."""
    flt = leg_query.filter
    ranking = leg_query.ranking
    if not decay and ranking.apply_decay:
        ranking = dataclasses.replace(ranking, apply_decay=False)
    return dataclasses.replace(
        leg_query,
        ranking=ranking,
        filter=dataclasses.replace(
            flt, include_catalog=False, since=window.start, until=window.end
        ),
    )


def _since(mark: float) -> float:
    return round((time.perf_counter() - mark) * 1000.0, 2)
