"""The tenant dashboard's consolidation panel (registered in ``ConsolidationConfig.ready``)."""

from __future__ import annotations

from django.http import HttpRequest

from consolidation.llm import model_configured, model_status
from consolidation.selectors import recent_runs, runs_per_day, tenant_token_usage
from tenants.admin import charts
from tenants.admin.dashboard import Panel, render_panel
from tenants.models import Tenant

DAYS = 14


def consolidation_panel(request: HttpRequest, tenant: Tenant) -> Panel:
    daily = runs_per_day(tenant, days=DAYS)
    labels = [f"{d.day:%d %b}" for d in daily]
    statuses = list(daily[0].by_status) if daily else []
    runs = charts.stacked_bars(
        "Consolidation runs per day", labels, {s: [d.by_status[s] for d in daily] for s in statuses}
    )
    tokens = charts.lines(
        "Chat-model tokens per day", labels, {"tokens": [d.tokens for d in daily]}, unit=""
    )
    body = render_panel(
        "consolidation.html",
        configured=model_configured(),
        status=model_status(),
        usage=tenant_token_usage(tenant),
        runs=recent_runs(tenant, limit=10),
        runs_chart=runs,
        tokens_chart=tokens,
        days=DAYS,
    )
    return Panel("consolidation", f"Consolidation (last {DAYS} days)", body)
