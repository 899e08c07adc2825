"""Reads with rules: one memory, a supersession chain, a page of the catalog; for the operator
console, pages of a user's memories, a tenant's growth and its recall statistics; for
consolidation, the episodes after its watermark; for erasure, a user's memories by id."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Literal

from django.db.models import Q, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from atlas_platform.exceptions import NotFound, ValidationError
from memory.models import OVERFLOW_MS, RecallStat, SessionCursor
from memory.services.catalog import catalog_engine_id
from memory.services.common import backend, personal_type, store_errors
from memory.services.scoping import catalog_read_scope, user_read_scope, writer_scope
from memory.types import PERSONAL_TYPES, GrowthBucket, GrowthPoint, MemoryDoc, MemoryType
from tenants.exports import in_batches
from tenants.models import Tenant, User

MAX_CHAIN = 100
MAX_CATALOG_PAGE = 200
SCAN_PAGE = 500
GET_CHUNK = 500


def memory_get(*, user: User, memory_id: str) -> MemoryDoc:
    """One memory of the user (or their tenant's catalog: ``catalog:<key>``); 404 for anything
    else."""
    with store_errors():
        doc = backend().get(user_read_scope(user), catalog_engine_id(user.tenant, memory_id))
    if doc is None or doc.memory_type == "entity":  # another app's searchable document
        raise NotFound(f"No memory {memory_id!r} for this user.", code="memory_not_found")
    return doc


def memory_history(*, user: User, memory_id: str) -> list[MemoryDoc]:
    """The supersession chain through ``memory_id``, oldest first: everything it (transitively)
    superseded and everything that superseded it. Forgotten links are skipped."""
    start = memory_get(user=user, memory_id=memory_id)
    scope = user_read_scope(user)
    seen: dict[str, MemoryDoc] = {start.id: start}
    frontier = [start]
    with store_errors():
        while frontier and len(seen) < MAX_CHAIN:
            wanted = {
                linked
                for doc in frontier
                for linked in [*doc.supersedes, *([doc.superseded_by] if doc.superseded_by else [])]
                if linked not in seen
            }
            frontier = backend().get_many(scope, sorted(wanted)) if wanted else []
            seen.update({d.id: d for d in frontier})
    return sorted(seen.values(), key=lambda d: (d.created_at, d.id))


def memory_get_many(*, user: User, memory_ids: Sequence[str]) -> list[MemoryDoc]:
    """Those of ``memory_ids`` that are the user's (or their tenant's catalog), in the order
    given; the others are left out."""
    with store_errors():
        return backend().get_many(user_read_scope(user), list(memory_ids)) if memory_ids else []


def memory_episodes_after(
    *, user: User, after: tuple[str, str] | None, limit: int
) -> list[MemoryDoc]:
    """Up to ``limit`` of the user's episodes ordered by (created_at, id), strictly after the
    key ``after`` (``(created_at_iso, id)``; None: from the first)."""
    with store_errors():
        return backend().scan(
            user_read_scope(user), memory_types=("episodic",), search_after=after, limit=limit
        )


def memory_previous_turn(*, user: User, session_id: str, before: datetime) -> MemoryDoc | None:
    """The user's newest turn of session ``session_id`` at or before ``before``, or None: the
    one read a live turn adds for its lexical context (``memory.services.turn_context``)."""
    with store_errors():
        return backend().previous_turn(
            tenant_id=user.memory_tenant_id,
            user_id=user.memory_id,
            session_id=session_id,
            before=before,
        )


@dataclass
class CatalogPage:
    documents: list[MemoryDoc]
    next_cursor: str | None  # pass as ``after`` for the next page; None on the last page


def catalog_list(*, tenant: Tenant, after: str | None = None, limit: int = 50) -> CatalogPage:
    """The tenant's catalog documents, oldest first, ``limit`` at a time after the opaque
    cursor ``after`` (from the previous page)."""
    if not 1 <= limit <= MAX_CATALOG_PAGE:
        raise ValidationError(f"limit must be between 1 and {MAX_CATALOG_PAGE}.", code="bad_limit")
    with store_errors():
        docs = backend().scan(
            catalog_read_scope(tenant),
            memory_types=("catalog",),
            search_after=_decode_cursor(after) if after else None,
            limit=limit,
        )
    last = docs[-1] if len(docs) == limit else None
    return CatalogPage(documents=docs, next_cursor=_encode_cursor(last) if last else None)


def _encode_cursor(doc: MemoryDoc) -> str:
    raw = json.dumps([doc.created_at.isoformat(), doc.id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


CURSOR_YEARS = (1900, 9000)  # a memory's created_at is a write time


def _decode_cursor(cursor: str) -> tuple[str, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created_at, memory_id = json.loads(raw)
        if isinstance(created_at, str) and isinstance(memory_id, str):
            # Only a real, aware timestamp within the years any store keeps reaches the engine
            # (a year 9999 or 0001 bound fails the cluster's date arithmetic: a 400 here).
            moment = datetime.fromisoformat(created_at)
            moment = moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
            if CURSOR_YEARS[0] <= moment.year <= CURSOR_YEARS[1]:
                return moment.isoformat(), memory_id
    except (binascii.Error, ValueError, TypeError, OverflowError):
        pass
    raise ValidationError("after is not a cursor this API returned.", code="bad_cursor")


# --- the operator console (admin memory inspector, tenant dashboard) ---------------------------
SupersededFilter = Literal["any", "current", "only"]
MAX_INSPECTOR_PAGE = 100


@dataclass
class MemoryPage:
    documents: list[MemoryDoc]
    next_cursor: str | None  # pass as ``after`` for the next page; None on the last page


def memory_page(
    *,
    user: User,
    memory_types: tuple[MemoryType, ...] = PERSONAL_TYPES,
    superseded: SupersededFilter = "any",
    created_from: datetime | None = None,
    created_to: datetime | None = None,
    after: str | None = None,
    limit: int = 25,
) -> MemoryPage:
    """A page of the user's own memories (oldest first), read as the user (their scoped key on
    a dls tenant), filtered by type, supersession and a ``created_at`` window."""
    if not 1 <= limit <= MAX_INSPECTOR_PAGE:
        raise ValidationError(f"limit must be 1 to {MAX_INSPECTOR_PAGE}.", code="bad_limit")
    unknown = set(memory_types) - set(PERSONAL_TYPES)
    if unknown or not memory_types:
        raise ValidationError("memory types: episodic, semantic, procedural.", code="bad_type")
    if created_from and created_to and created_from > created_to:
        raise ValidationError("from must not be after to.", code="bad_time_range")
    with store_errors():
        docs = backend().scan(
            user_read_scope(user),
            memory_types=memory_types,
            include_superseded=superseded != "current",
            only_superseded=superseded == "only",
            created_from=created_from,
            created_to=created_to,
            search_after=_decode_cursor(after) if after else None,
            limit=limit,
        )
    last = docs[-1] if len(docs) == limit else None
    return MemoryPage(documents=docs, next_cursor=_encode_cursor(last) if last else None)


def memory_export(*, user: User) -> Iterator[MemoryDoc]:
    """Every personal memory of the user (superseded ones included), oldest first, read as the
    user: what the right of access hands over. Page by page; the caller decides the cap."""
    after: str | None = None
    while True:
        page = memory_page(user=user, after=after, limit=MAX_INSPECTOR_PAGE)
        yield from page.documents
        if page.next_cursor is None:
            return
        after = page.next_cursor


@dataclass(frozen=True)
class Profile:
    """What Atlas knows about a user at a glance: current facts, playbooks, how many of each."""

    facts: list[MemoryDoc]
    playbooks: list[MemoryDoc]
    counts: dict[str, int]


def session_cursors_export(*, user: User) -> Iterator[SessionCursor]:
    """The user's session cursors (one per agent that recorded a live turn), for the export."""
    return in_batches(SessionCursor.objects.filter(user=user))


def memory_profile(*, user: User, limit: int = 50) -> Profile:
    """The user's current (not superseded) facts and their playbooks, newest last, at most
    ``limit`` of each, and the number of memories per type (episodes counted, not listed)."""
    facts = memory_page(user=user, memory_types=("semantic",), superseded="current", limit=limit)
    plays = memory_page(user=user, memory_types=("procedural",), limit=limit)
    counts = {k: v for k, v in memory_counts(user=user).items() if k in PERSONAL_TYPES}
    return Profile(facts=facts.documents, playbooks=plays.documents, counts=counts)


def memory_counts(*, user: User) -> dict[str, int]:
    """The user's memories per type (their tenant's catalog included), read as the user;
    other apps' searchable documents (``entity``) are not memories and are not counted."""
    with store_errors():
        counts = backend().count(user_read_scope(user))
    return {kind: n for kind, n in counts.items() if kind != "entity"}


def tenant_memory_growth(*, tenant: Tenant, bucket: GrowthBucket) -> list[GrowthPoint]:
    """The tenant's documents per type per week or month (counts only; see ``growth``)."""
    with store_errors():
        return backend().growth(tenant.memory_id, bucket=bucket)


def memory_totals_by_tenant(*, tenants: Sequence[Tenant]) -> dict[int, int]:
    """Memories (not ``entity`` documents) of each tenant, by tenant pk, in one store read."""
    with store_errors():
        totals = backend().tenant_memory_totals([t.memory_id for t in tenants])
    return {t.pk: totals.get(t.memory_id, 0) for t in tenants}


def recall_volume_by_tenant(*, tenants: Sequence[Tenant]) -> dict[int, tuple[int, int]]:
    """Recalls of each tenant in the last 24 hours and the last 7 days, in one query."""
    now = timezone.now()
    day, week = now - timedelta(hours=24), now - timedelta(days=7)
    rows = (
        RecallStat.objects.filter(tenant__in=[t.pk for t in tenants], hour__gte=week)
        .values("tenant_id")
        .annotate(
            day=Coalesce(Sum("count", filter=Q(hour__gte=day)), 0),
            week=Coalesce(Sum("count"), 0),
        )
    )
    volume = {row["tenant_id"]: (row["day"], row["week"]) for row in rows}
    return {t.pk: volume.get(t.pk, (0, 0)) for t in tenants}


@dataclass(frozen=True)
class RecallDay:
    day: date
    count: int
    p50_ms: float | None
    p95_ms: float | None


@dataclass(frozen=True)
class RecallSummary:
    days: list[RecallDay]
    count: int
    p50_ms: float | None
    p95_ms: float | None


def recall_stats(*, tenant: Tenant, days: int = 14) -> RecallSummary:
    """The tenant's recalls per UTC day over the last ``days`` days (today included), with
    latency percentiles estimated from the fixed histogram buckets (linear within a bucket),
    per day and over the whole period."""
    today = timezone.now().astimezone(UTC).date()
    first = today - timedelta(days=days - 1)
    start = datetime(first.year, first.month, first.day, tzinfo=UTC)
    per_day: dict[date, dict[int, int]] = {first + timedelta(days=n): {} for n in range(days)}
    rows = RecallStat.objects.filter(tenant=tenant, hour__gte=start).values_list(
        "hour", "le_ms", "count"
    )
    for hour, le_ms, count in rows:
        buckets = per_day.setdefault(hour.astimezone(UTC).date(), {})
        buckets[le_ms] = buckets.get(le_ms, 0) + count
    overall: dict[int, int] = {}
    for buckets in per_day.values():
        for le_ms, count in buckets.items():
            overall[le_ms] = overall.get(le_ms, 0) + count
    return RecallSummary(
        days=[
            RecallDay(
                day=day,
                count=sum(buckets.values()),
                p50_ms=histogram_percentile(buckets, 0.50),
                p95_ms=histogram_percentile(buckets, 0.95),
            )
            for day, buckets in sorted(per_day.items())
        ],
        count=sum(overall.values()),
        p50_ms=histogram_percentile(overall, 0.50),
        p95_ms=histogram_percentile(overall, 0.95),
    )


def histogram_percentile(buckets: dict[int, int], q: float) -> float | None:
    """The ``q`` quantile of a latency histogram ``{upper bound ms: count}``; None if empty.
    Linear within the bucket it falls in; the overflow bucket reports its lower bound."""
    total = sum(buckets.values())
    if not total:
        return None
    wanted, seen, lower = q * total, 0, 0.0
    for bound in sorted(buckets):
        count = buckets[bound]
        if count and seen + count >= wanted:
            if bound == OVERFLOW_MS:
                return lower
            return round(lower + (bound - lower) * (wanted - seen) / count, 1)
        seen += count
        lower = float(bound)
    return lower


# --- erasure (the platform's writer credential: every document of the user) ------------------
def memory_ids_page(
    *,
    tenant_id: str,
    user_id: str,
    memory_type: str,
    among: list[str] | None = None,
    limit: int = 500,
) -> list[str]:
    """The ids of up to ``limit`` of user ``user_id``'s memories of ``memory_type`` (only those
    among ``among`` when given), in id order; never another user's or the catalog's. Ids only:
    no text is read."""
    kind = personal_type(memory_type)
    with store_errors():
        return backend().find_ids(
            tenant_id=tenant_id, user_id=user_id, memory_type=kind, among=among, limit=limit
        )


def memory_remaining_count(
    *, tenant_id: str, user_id: str, memory_type: str, among: list[str] | None = None
) -> int:
    """How many of the user's memories of ``memory_type`` remain (among ``among`` if given)."""
    kind = personal_type(memory_type)
    with store_errors():
        return backend().count_ids(
            tenant_id=tenant_id, user_id=user_id, memory_type=kind, among=among
        )


def memory_personal_all(*, tenant_id: str, user_id: str) -> Iterator[MemoryDoc]:
    """Every personal memory of the user, superseded ones included, page by page in
    (created_at, id) order."""
    scope = writer_scope(tenant_id=tenant_id, user_id=user_id)
    after: tuple[str, str] | None = None
    while True:
        with store_errors():
            docs = backend().scan(
                scope, memory_types=PERSONAL_TYPES, search_after=after, limit=SCAN_PAGE
            )
        yield from (d for d in docs if d.user_id == user_id)
        if len(docs) < SCAN_PAGE:
            return
        after = (docs[-1].created_at.isoformat(), docs[-1].id)


def memory_personal_get(*, tenant_id: str, user_id: str, memory_ids: list[str]) -> list[MemoryDoc]:
    """The user's personal memories among ``memory_ids`` (superseded ones included), in
    (created_at, id) order, as ``memory_personal_all`` lists them."""
    scope = writer_scope(tenant_id=tenant_id, user_id=user_id)
    found: dict[str, MemoryDoc] = {}
    wanted = list(dict.fromkeys(memory_ids))
    for start in range(0, len(wanted), GET_CHUNK):
        with store_errors():
            docs = backend().get_many(scope, wanted[start : start + GET_CHUNK])
        found.update(
            (d.id, d) for d in docs if d.user_id == user_id and d.memory_type in PERSONAL_TYPES
        )
    return sorted(found.values(), key=lambda d: (d.created_at, d.id))


def memory_supporting_episode_ids(
    *, tenant_id: str, user_id: str, memory_ids: list[str]
) -> list[str]:
    """The episodes the user's memories among ``memory_ids`` name as their support, each once."""
    scope = writer_scope(tenant_id=tenant_id, user_id=user_id)
    episodes: list[str] = []
    for start in range(0, len(memory_ids), GET_CHUNK):
        with store_errors():
            docs = backend().get_many(scope, memory_ids[start : start + GET_CHUNK])
        episodes += [e for d in docs if d.user_id == user_id for e in d.supporting_episode_ids]
    return list(dict.fromkeys(episodes))


def memory_ids_stored_before(
    *, tenant_id: str, user_id: str, memory_type: MemoryType, before: datetime, limit: int
) -> list[str]:
    """Up to ``limit`` ids of the user's own memories of ``memory_type`` stored (``created_at``)
    before ``before``, oldest first (retention's candidates; the platform's credential)."""
    scope = writer_scope(tenant_id=tenant_id, user_id=user_id)
    with store_errors():
        docs = backend().scan(
            scope,
            memory_types=(memory_type,),
            created_to=before - timedelta(microseconds=1),
            limit=limit,
        )
    return [d.id for d in docs if d.user_id == user_id]
