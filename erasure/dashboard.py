"""The tenant dashboard's forget-request panel (registered in ``ErasureConfig.ready``)."""

from __future__ import annotations

from collections.abc import Sequence

from django.http import HttpRequest

from erasure.selectors import (
    forget_request_counts,
    open_forget_request_counts,
    open_forget_requests,
)
from tenants.admin import charts
from tenants.admin.dashboard import Panel, render_panel
from tenants.admin.overview import Column
from tenants.models import Tenant


def forget_requests_panel(request: HttpRequest, tenant: Tenant) -> Panel:
    counts = forget_request_counts(tenant=tenant)
    rows = open_forget_requests(tenant=tenant)
    chart = charts.stacked_bars(
        "Forget requests by status", list(counts), {"requests": list(counts.values())}
    )
    body = render_panel("forget_requests.html", rows=rows, counts=counts, chart=chart)
    return Panel("forget-requests", "Forget requests", body)


def open_erasures_column(tenants: Sequence[Tenant]) -> Column:
    """The platform overview's forget requests not done yet, per tenant."""
    return Column("erasures", "open erasures", dict(open_forget_request_counts(tenants=tenants)))
