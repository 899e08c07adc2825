"""memory's panels of the tenant dashboard: the store by type and its growth, recall volume and
latency (registered first on the page by ``memory.admin``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, timedelta

from django.http import HttpRequest
from django.utils import timezone

from atlas_platform.exceptions import AtlasError
from memory.selectors import (
    memory_totals_by_tenant,
    recall_stats,
    recall_volume_by_tenant,
    tenant_memory_growth,
)
from memory.types import ENTITY, MEMORY_TYPES, GrowthBucket
from tenants.admin import charts
from tenants.admin.dashboard import Panel, render_panel
from tenants.admin.overview import Column
from tenants.models import Tenant

GROWTH_BUCKETS = 12
RECALL_DAYS = 14


def bucket_starts(bucket: GrowthBucket, today: date, n: int) -> list[date]:
    """The starts of the last ``n`` calendar weeks (Mondays) or months (1sts), oldest first."""
    if bucket == "week":
        monday = today - timedelta(days=today.weekday())
        return [monday - timedelta(weeks=k) for k in range(n - 1, -1, -1)]
    starts, year, month = [], today.year, today.month
    for _ in range(n):
        starts.append(date(year, month, 1))
        year, month = (year, month - 1) if month > 1 else (year - 1, 12)
    return starts[::-1]


def memories_panel(request: HttpRequest, tenant: Tenant) -> Panel:
    bucket: GrowthBucket = "month" if request.GET.get("bucket") == "month" else "week"
    try:
        points = tenant_memory_growth(tenant=tenant, bucket=bucket)
    except AtlasError as exc:
        return Panel("memories", "Memories", render_panel("error.html", message=exc.message))
    # Memories only: another app's searchable documents (``entity``) are not memories.
    points = [p for p in points if p.memory_type != ENTITY]
    kinds = [kind for kind in MEMORY_TYPES if kind != ENTITY]
    totals = dict.fromkeys(kinds, 0)
    for point in points:
        totals[point.memory_type] += point.count
    starts = bucket_starts(bucket, timezone.now().astimezone(UTC).date(), GROWTH_BUCKETS)
    new: dict[str, list[float]] = {kind: [0] * len(starts) for kind in kinds}
    index = {start: n for n, start in enumerate(starts)}
    for point in points:
        n = index.get(point.start.date())
        if n is not None:
            new[point.memory_type][n] += point.count
    labels = [f"{s:%d %b}" if bucket == "week" else f"{s:%b %Y}" for s in starts]
    chart = charts.stacked_bars(f"New memories per {bucket}", labels, new)
    body = render_panel(
        "memories.html", totals=totals, total=sum(totals.values()), chart=chart, bucket=bucket
    )
    return Panel("memories", "Memories by type and their growth", body)


def recall_panel(request: HttpRequest, tenant: Tenant) -> Panel:
    summary = recall_stats(tenant=tenant, days=RECALL_DAYS)
    labels = [f"{d.day:%d %b}" for d in summary.days]
    volume = charts.stacked_bars(
        "Recalls per day", labels, {"recalls": [d.count for d in summary.days]}
    )
    latency = charts.lines(
        "Recall latency per day",
        labels,
        {"p50": [d.p50_ms for d in summary.days], "p95": [d.p95_ms for d in summary.days]},
        unit=" ms",
    )
    body = render_panel(
        "recall.html", summary=summary, volume=volume, latency=latency, days=RECALL_DAYS
    )
    return Panel("recall", f"Recall volume and latency (last {RECALL_DAYS} days)", body)


def memories_column(tenants: Sequence[Tenant]) -> Column:
    """The platform overview's memory count per tenant (one store read for all of them)."""
    return Column("memories", "memories", dict(memory_totals_by_tenant(tenants=tenants)))


def recalls_column(tenants: Sequence[Tenant]) -> Column:
    """The platform overview's recall volume per tenant: last 24 h / last 7 days."""
    volume = recall_volume_by_tenant(tenants=tenants)
    return Column(
        "recalls", "recalls 24 h / 7 d", {pk: f"{d:,} / {w:,}" for pk, (d, w) in volume.items()}
    )
