"""The tenant dashboard: a page of panels, each one a function of (request, tenant).

EXTENSION POINT: ``PANELS`` is the registry. A feature adds its panel by appending a function
that returns a ``Panel`` (or None to stay hidden) — e.g. the erasure app's open forget requests
and consolidation's runs — from this module or its app's ``ready()``. Panels read through
selectors only; the dashboard page has already checked that the operator reaches the tenant.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, timedelta

from django.http import HttpRequest
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.safestring import SafeString

from atlas_platform.exceptions import AtlasError
from memory.engine.types import MEMORY_TYPES, GrowthBucket
from memory.selectors import recall_stats, tenant_memory_growth
from tenants.admin import charts
from tenants.models import Tenant
from tenants.selectors import tenant_key_ages

GROWTH_BUCKETS = 12
RECALL_DAYS = 14
KEY_ROWS = 50


@dataclass(frozen=True)
class Panel:
    key: str  # the panel's HTML id
    title: str
    body: SafeString


PanelFn = Callable[[HttpRequest, Tenant], "Panel | None"]


def render_panel(template: str, **context: object) -> SafeString:
    """A panel body from ``templates/admin/atlas/panels/<template>``."""
    return SafeString(render_to_string(f"admin/atlas/panels/{template}", context))


_render = render_panel


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
        return Panel("memories", "Memories", _render("error.html", message=exc.message))
    totals = dict.fromkeys(MEMORY_TYPES, 0)
    for point in points:
        totals[point.memory_type] += point.count
    starts = bucket_starts(bucket, timezone.now().astimezone(UTC).date(), GROWTH_BUCKETS)
    new: dict[str, list[float]] = {kind: [0] * len(starts) for kind in MEMORY_TYPES}
    index = {start: n for n, start in enumerate(starts)}
    for point in points:
        n = index.get(point.start.date())
        if n is not None:
            new[point.memory_type][n] += point.count
    labels = [f"{s:%d %b}" if bucket == "week" else f"{s:%b %Y}" for s in starts]
    chart = charts.stacked_bars(f"New memories per {bucket}", labels, new)
    body = _render(
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
    body = _render("recall.html", summary=summary, volume=volume, latency=latency, days=RECALL_DAYS)
    return Panel("recall", f"Recall volume and latency (last {RECALL_DAYS} days)", body)


def key_ages_panel(request: HttpRequest, tenant: Tenant) -> Panel:
    policy = tenant.key_rotation_days
    rows = tenant_key_ages(tenant=tenant)
    groups = {
        f"< {policy // 2} d": 0,
        f"{policy // 2}-{policy} d": 0,
        f"> {policy} d (rotate)": 0,
        "no key": 0,
    }
    names = list(groups)
    for _, status in rows:
        if status.age is None:
            groups[names[3]] += 1
        elif status.age > timedelta(days=policy):
            groups[names[2]] += 1
        else:
            groups[names[0] if status.age < timedelta(days=policy / 2) else names[1]] += 1
    chart = charts.stacked_bars("Keys by age", names, {"keys": list(groups.values())})
    overdue = [row for row in rows if row[1].state in ("stale", "missing", "pending_invalidation")]
    body = _render(
        "keys.html", rows=rows[:KEY_ROWS], policy=policy, chart=chart, overdue=len(overdue)
    )
    return Panel("keys", f"Scoped key ages (rotation policy: {policy} days)", body)


PANELS: list[PanelFn] = [memories_panel, recall_panel, key_ages_panel]


def dashboard_panels(request: HttpRequest, tenant: Tenant) -> list[Panel]:
    return [panel for fn in PANELS if (panel := fn(request, tenant)) is not None]
