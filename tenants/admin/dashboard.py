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
from datetime import timedelta

from django.http import HttpRequest
from django.template.loader import render_to_string
from django.utils.safestring import SafeString

from atlas_platform.cluster import get_cluster
from tenants.admin import charts
from tenants.models import Tenant
from tenants.selectors import tenant_key_ages

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


def key_ages_panel(request: HttpRequest, tenant: Tenant) -> Panel:
    policy = tenant.key_rotation_days
    title = f"Scoped key ages (rotation policy: {policy} days)"
    if get_cluster() is None:  # the embedded default: there is no key to make or rotate
        return Panel("keys", title, render_panel("keys.html", no_cluster=True, policy=policy))
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
    # Only a cluster-enforced tenant's reads need a key: elsewhere a missing one is no fault.
    needs = (
        "stale",
        "pending_invalidation",
        *(("missing",) if not tenant.isolation_is_weaker else ()),
    )
    overdue = [row for row in rows if row[1].state in needs]
    body = render_panel(
        "keys.html", rows=rows[:KEY_ROWS], policy=policy, chart=chart, overdue=len(overdue)
    )
    return Panel("keys", title, body)


PANELS: list[PanelFn] = [key_ages_panel]


def add_panel(panel: PanelFn, *, first: bool = False) -> None:
    """Register a panel (once): at the end of the page, or ``first``."""
    if panel not in PANELS:
        PANELS.insert(0 if first else len(PANELS), panel)


def dashboard_panels(request: HttpRequest, tenant: Tenant) -> list[Panel]:
    return [panel for fn in PANELS if (panel := fn(request, tenant)) is not None]
