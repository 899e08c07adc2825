"""Recall statistics: the tenant's hourly latency histogram, counted in memory and written in
batches.

A recall only notes its latency (``recall_stat_note``, into an ``atlas_platform.flusher``).
Whichever recall finds the batch older than ``ATLAS_RECALL_STATS_FLUSH_S`` writes it: one
upsert per (tenant, hour, bucket) for every recall noted since, instead of one statement per
recall. The write happens on a request thread (no background writer holding a database
connection); ``recall_stats_flush`` writes what is pending now (``bookkeeping.drain``, process
exit). A process that dies loses at most one interval of counts: a metric, not anyone's data.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Callable
from datetime import datetime

from django.conf import settings
from django.db import DatabaseError, connection

from atlas_platform.flusher import Flusher
from memory.models import LATENCY_BOUNDS_MS, OVERFLOW_MS, RecallStat
from tenants.models import Tenant

log = logging.getLogger(__name__)

# One statement on PostgreSQL and SQLite alike: insert the bucket or add to it.
_UPSERT = """
    INSERT INTO {table} (tenant_id, hour, le_ms, "count", total_ms) VALUES (%s, %s, %s, %s, %s)
    ON CONFLICT (tenant_id, hour, le_ms)
    DO UPDATE SET "count" = {table}."count" + excluded."count",
                  total_ms = {table}.total_ms + excluded.total_ms
"""

Bucket = tuple[int, datetime, int]  # tenant, hour, upper bound (ms)


def latency_bucket(took_ms: float) -> int:
    """The histogram bucket (its upper bound in ms) that ``took_ms`` falls in."""
    index = bisect.bisect_left(LATENCY_BOUNDS_MS, took_ms)
    return LATENCY_BOUNDS_MS[index] if index < len(LATENCY_BOUNDS_MS) else OVERFLOW_MS


def _merge(took_ms: float) -> Callable[[list[float] | None], list[float]]:
    def counted(seen: list[float] | None) -> list[float]:
        count, total = seen or (0, 0.0)
        return [count + 1, total + took_ms]

    return counted


def recall_stat_note(*, tenant_id: int, took_ms: float, at: datetime) -> None:
    """Count one recall of ``tenant_id`` that took ``took_ms`` (at ``at``, an aware time); the
    count reaches the database with the next batch. Never fails the recall.

    A recall inside someone's transaction never writes the batch: other tenants' counts must
    not ride on (or roll back with) a transaction they are not part of."""
    may_write = not connection.in_atomic_block
    _pending.add(_bucket(tenant_id, took_ms, at), _merge(took_ms), may_write=may_write)


def recall_stats_flush() -> None:
    """Write every pending count now."""
    _pending.flush()


def recall_stats_discard() -> None:
    """Drop the pending counts unwritten (a test's counts must not outlive its tenants)."""
    _pending.discard()


def _bucket(tenant_id: int, took_ms: float, at: datetime) -> Bucket:
    return tenant_id, at.replace(minute=0, second=0, microsecond=0), latency_bucket(took_ms)


def _write(batch: dict[Bucket, list[float]]) -> None:
    """A metric, not a change to anyone's data, so no audit event. A failure is logged."""
    sql = _UPSERT.format(table=connection.ops.quote_name(RecallStat._meta.db_table))
    try:
        # Only tenants that (still) exist: a count must never fail a foreign key at commit.
        live = set(Tenant.objects.filter(pk__in={b[0] for b in batch}).values_list("pk", flat=True))
    except DatabaseError:
        log.exception("recall statistics not recorded", extra={"buckets": len(batch)})
        return
    batch = {bucket: counts for bucket, counts in batch.items() if bucket[0] in live}
    if not batch:
        return
    rows = [
        (tenant, hour, le_ms, int(n), total) for (tenant, hour, le_ms), (n, total) in batch.items()
    ]
    try:
        # No savepoint: recall runs outside any transaction, and this stays one round of
        # statements.
        with connection.cursor() as cursor:
            cursor.executemany(sql, rows)
    except DatabaseError:
        log.exception("recall statistics not recorded", extra={"buckets": len(rows)})


_pending: Flusher[Bucket, list[float]] = Flusher(
    name="atlas-recall-stats",
    write=_write,
    interval=lambda: float(settings.ATLAS_RECALL_STATS_FLUSH_S),
    background=False,  # written by the recall that finds the batch due
    at_exit=True,
)
