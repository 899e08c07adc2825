"""Reads for the admin and the dashboard: token use per tenant, recent runs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, QuerySet, Sum
from django.db.models.functions import Coalesce

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
