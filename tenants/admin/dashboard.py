"""The tenant dashboard: a page of panels, each one a function of (request, tenant).

EXTENSION POINT: ``PANELS`` is the registry. A feature adds its panel with ``add_panel``, a
function that returns a ``Panel`` (or None to stay hidden) — memory's stores and recalls,
consolidation's runs, the erasure app's open forget requests — from its admin module or its
app's ``ready()``. Panels read through
selectors only; the dashboard page has already checked that the operator reaches the tenant.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.http import HttpRequest
from django.template.loader import render_to_string
from django.utils.safestring import SafeString

from atlas_platform.cluster import get_cluster
from tenants.admin import charts
from tenants.models import Tenant
from tenants.selectors import key_lifetime, tenant_key_ages

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


def key_ages_panel(request: HttpRequest, tenant: Tenant) -> Panel | None:
    """Scoped keys by age against their real lifetime (``key_lifetime``); no panel without a
    cluster (the embedded store has no keys to show)."""
    if get_cluster() is None:
        return None
    lifetime = key_lifetime()
    title = f"Scoped key ages ({lifetime.label})"
    rows = tenant_key_ages(tenant=tenant)
    due = lifetime.renew_after
    groups = {
        f"< {due.days} d": 0,
        f"{due.days}-{lifetime.ttl_days:g} d (renewing)": 0,
        "renewal overdue": 0,
        "no key": 0,
    }
    names = list(groups)
    for _, status in rows:
        if status.age is None:
            groups[names[3]] += 1
        elif status.state == "stale":
            groups[names[2]] += 1
        else:
            groups[names[0] if status.age < due else names[1]] += 1
    chart = charts.stacked_bars("Keys by age", names, {"keys": list(groups.values())})
    # Only a cluster-enforced tenant's reads need a key: elsewhere a missing one is no fault.
    needs = (
        "stale",
        "pending_invalidation",
        *(("missing",) if not tenant.isolation_is_weaker else ()),
    )
    overdue = [row for row in rows if row[1].state in needs]
    body = render_panel(
        "keys.html", rows=rows[:KEY_ROWS], lifetime=lifetime, chart=chart, overdue=len(overdue)
    )
    return Panel("keys", title, body)


PANELS: list[PanelFn] = [key_ages_panel]


def add_panel(panel: PanelFn, *, first: bool = False) -> None:
    """Register a panel (once): at the end of the page, or ``first``."""
    if panel not in PANELS:
        PANELS.insert(0 if first else len(PANELS), panel)


def dashboard_panels(request: HttpRequest, tenant: Tenant) -> list[Panel]:
    return [panel for fn in PANELS if (panel := fn(request, tenant)) is not None]
