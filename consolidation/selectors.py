"""Reads for the admin and the dashboard: token use per tenant, recent runs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from django.db.models import Count, QuerySet, Sum
from django.db.models.functions import Coalesce, TruncDate
from django.utils import timezone

from consolidation.models import ConsolidationRun
from tenants.models import Tenant


@dataclass(frozen=True)
class TokenUsage:
    runs: int
    prompt_tokens: int
    completion_tokens: int

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def tenant_token_usage(tenant: Tenant, *, since: datetime | None = None) -> TokenUsage:
    """Chat-model tokens the tenant's consolidation runs used (failed runs included: they
    were paid for), optionally since a moment."""
    runs = ConsolidationRun.objects.filter(tenant=tenant)
    if since is not None:
        runs = runs.filter(created_at__gte=since)
    totals = runs.aggregate(
        runs=Count("id"),
        prompt=Coalesce(Sum("prompt_tokens"), 0),
        completion=Coalesce(Sum("completion_tokens"), 0),
    )
    return TokenUsage(
        runs=totals["runs"],
        prompt_tokens=totals["prompt"],
        completion_tokens=totals["completion"],
    )


def token_usage_by_tenant(tenants: QuerySet[Tenant]) -> dict[str, TokenUsage]:
    """Token use per tenant name for these tenants, in one query (tenants with runs only)."""
    rows = (
        ConsolidationRun.objects.filter(tenant__in=tenants)
        .values("tenant__name")
        .annotate(
            runs=Count("id"),
            prompt=Coalesce(Sum("prompt_tokens"), 0),
            completion=Coalesce(Sum("completion_tokens"), 0),
        )
        .order_by("tenant__name")
    )
    return {
        row["tenant__name"]: TokenUsage(
            runs=row["runs"], prompt_tokens=row["prompt"], completion_tokens=row["completion"]
        )
        for row in rows
    }


def recent_runs(tenant: Tenant, *, limit: int = 20) -> list[ConsolidationRun]:
    """The tenant's latest runs, newest first, with their users."""
    return list(
        ConsolidationRun.objects.filter(tenant=tenant).select_related("user__tenant")[:limit]
    )


@dataclass(frozen=True)
class DailyRuns:
    day: date
    by_status: dict[str, int]
    tokens: int


def runs_per_day(tenant: Tenant, *, days: int) -> list[DailyRuns]:
    """Runs per status and tokens used per UTC day for the last ``days`` days (oldest first,
    every day present), in one query."""
    today = timezone.now().astimezone(UTC).date()
    first = today - timedelta(days=days - 1)
    rows = (
        ConsolidationRun.objects.filter(
            tenant=tenant, created_at__gte=datetime.combine(first, time.min, tzinfo=UTC)
        )
        .annotate(day=TruncDate("created_at", tzinfo=UTC))
        .values("day", "status")
        .annotate(
            n=Count("id"),
            tokens=Coalesce(Sum("prompt_tokens"), 0) + Coalesce(Sum("completion_tokens"), 0),
        )
    )
    out = {
        first + timedelta(days=k): DailyRuns(
            day=first + timedelta(days=k),
            by_status=dict.fromkeys(ConsolidationRun.Status.values, 0),
            tokens=0,
        )
        for k in range(days)
    }
    for row in rows:
        entry = out.get(row["day"])
        if entry is not None:
            entry.by_status[row["status"]] += row["n"]
            out[row["day"]] = DailyRuns(entry.day, entry.by_status, entry.tokens + row["tokens"])
    return list(out.values())
