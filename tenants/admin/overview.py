"""The platform overview: one row per tenant, one column per feature, for platform admins.

EXTENSION POINT: ``COLUMNS`` is the registry, like the dashboard's ``PANELS``. A feature adds
its column with ``add_column``: a title and a function from the listed tenants to each one's
cell, read for all of them at once (one query per column, never one per tenant) — memory's
counts and recall volume, the erasure app's open forget requests — from its admin module or
its app's ``ready()``. A column function returns None to stay off the page (as key health
does without a cluster).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.utils.html import format_html

from atlas_platform.cluster import get_cluster
from tenants.models import Tenant
from tenants.selectors import key_health_by_tenant

Cell = object  # a number or text (escaped in the template) or SafeString


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    cells: dict[int, Cell]  # tenant pk -> cell


ColumnFn = Callable[[Sequence[Tenant]], "Column | None"]


def key_health_column(tenants: Sequence[Tenant]) -> Column | None:
    """Users whose scoped key's renewal is overdue, pending invalidation, or missing (missing
    counts only where the cluster enforces the tenant's reads); no column without a cluster."""
    if get_cluster() is None:
        return None
    health = key_health_by_tenant(tenants=tenants)
    cells: dict[int, Cell] = {}
    for tenant in tenants:
        row = health[tenant.pk]
        missing = 0 if tenant.isolation_is_weaker else row.users - row.keyed
        faults = [
            f"{n} {what}"
            for n, what in (
                (row.stale, "overdue"),
                (row.pending, "pending invalidation"),
                (missing, "missing"),
            )
            if n
        ]
        cells[tenant.pk] = (
            format_html('<span class="atlas-flag">{}</span>', ", ".join(faults))
            if faults
            else f"ok ({row.keyed} keys)"
        )
    return Column("keys", "key health", cells)


COLUMNS: list[ColumnFn] = [key_health_column]


def add_column(column: ColumnFn, *, first: bool = False) -> None:
    """Register a column (once): at the right end of the table, or ``first``."""
    if column not in COLUMNS:
        COLUMNS.insert(0 if first else len(COLUMNS), column)


def overview_columns(tenants: Sequence[Tenant]) -> list[Column]:
    return [column for fn in COLUMNS if (column := fn(tenants)) is not None]
