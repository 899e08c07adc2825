"""The tenant dashboard's consolidation panel (registered in ``ConsolidationConfig.ready``)."""

from __future__ import annotations

from django.http import HttpRequest

from consolidation.llm import model_configured, model_status
from consolidation.selectors import recent_runs, runs_per_day, tenant_token_usage
from tenants.admin import charts
from tenants.admin.dashboard import Panel, render_panel
from tenants.models import Tenant

DAYS = 14


def consolidation_is_off(tenant: Tenant) -> bool:
    """No model to consolidate with, or the tenant asks for neither trigger (count nor daily)."""
    triggers = tenant.consolidation_every_n_episodes > 0 or tenant.consolidation_daily
    return not (model_configured() and triggers)


def consolidation_panel(request: HttpRequest, tenant: Tenant) -> Panel | None:
    """No panel while consolidation is off for the tenant and no run happened in the window:
    there would be nothing but empty charts. Runs (e.g. on demand) keep it on the page."""
    daily = runs_per_day(tenant, days=DAYS)
    if consolidation_is_off(tenant) and not any(sum(d.by_status.values()) for d in daily):
        return None
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
