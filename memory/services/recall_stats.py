"""Recall statistics: one upsert per recall into the tenant's hourly latency histogram."""

from __future__ import annotations

import bisect
import logging
from datetime import datetime

from django.db import DatabaseError, connection

from memory.models import LATENCY_BOUNDS_MS, OVERFLOW_MS, RecallStat

log = logging.getLogger(__name__)

# One statement on PostgreSQL and SQLite alike: insert the bucket or add to it.
_UPSERT = """
    INSERT INTO {table} (tenant_id, hour, le_ms, "count", total_ms) VALUES (%s, %s, %s, 1, %s)
    ON CONFLICT (tenant_id, hour, le_ms)
    DO UPDATE SET "count" = {table}."count" + 1, total_ms = {table}.total_ms + excluded.total_ms
"""


def latency_bucket(took_ms: float) -> int:
    """The histogram bucket (its upper bound in ms) that ``took_ms`` falls in."""
    index = bisect.bisect_left(LATENCY_BOUNDS_MS, took_ms)
    return LATENCY_BOUNDS_MS[index] if index < len(LATENCY_BOUNDS_MS) else OVERFLOW_MS


def recall_stat_record(*, tenant_id: int, took_ms: float, at: datetime) -> None:
    """Count one recall of ``tenant_id`` that took ``took_ms`` (at ``at``, an aware time).

    A metric, not a change to anyone's data, so no audit event. A failure is logged and never
    fails the recall.
    """
    hour = at.replace(minute=0, second=0, microsecond=0)
    sql = _UPSERT.format(table=connection.ops.quote_name(RecallStat._meta.db_table))
    params = (tenant_id, hour, latency_bucket(took_ms), took_ms)
    try:
        # No savepoint: recall runs outside any transaction, and this stays one query.
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
    except DatabaseError:
        log.exception("recall statistics not recorded")
