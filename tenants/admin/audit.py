"""The audit trail: read-only and filterable (tenant, actor, action, user, time range, request
id), with a CSV export of exactly the filtered view. No add, change or delete for anyone."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from datetime import UTC, datetime, time, timedelta
from typing import Any
from urllib.parse import urlencode

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path
from django.utils.dateparse import parse_date, parse_datetime
from django.utils.html import format_html

from tenants.admin.base import UNREADABLE_FILTER, ScopedModelAdmin, bad_query_string, filter_refused
from tenants.admin.site import site
from tenants.models import AuditEvent
from tenants.scoping import request_scope

CSV_COLUMNS = [
    "created_at",
    "request_id",
    "actor_type",
    "actor_id",
    "actor_label",
    "tenant_id",
    "tenant",
    "subject_user_id",
    "subject_user",
    "action",
    "target_type",
    "target_id",
    "metadata",
]


class TimeRangeFilter(admin.ListFilter):
    """``created_from`` / ``created_to``: a date (the whole day) or a date and time, in UTC."""

    title = "time range (UTC)"
    template = "admin/atlas/time_range_filter.html"
    parameters = ("created_from", "created_to")

    def __init__(self, request: HttpRequest, params: dict[str, Any], *args: Any) -> None:
        super().__init__(request, params, *args)
        self.values: dict[str, str] = {}
        for name in self.parameters:
            if name in params:
                value = params.pop(name)
                self.values[name] = value[-1] if isinstance(value, list) else value
        self.other_params = [
            (key, value)
            for key, values in request.GET.lists()
            for value in values
            if key not in self.parameters
        ]

    def has_output(self) -> bool:
        return True

    def expected_parameters(self) -> list[str | None]:
        return list(self.parameters)

    def choices(self, changelist: ChangeList) -> Iterator[dict[str, Any]]:  # type: ignore[override]
        yield {"values": self.values, "hidden": [(k, v) for k, v in self.other_params if k != "p"]}

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        start = _moment(self.values.get("created_from"), end=False)
        end = _moment(self.values.get("created_to"), end=True)
        if start is not None:
            queryset = queryset.filter(created_at__gte=start)
        if end is not None:
            queryset = queryset.filter(created_at__lte=end)
        return queryset


def _moment(text: str | None, *, end: bool) -> datetime | None:
    """A bound from the filter: a date means its whole day; anything unreadable is refused."""
    if not text:
        return None
    moment = parse_datetime(text)
    if moment is not None:
        return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    day = parse_date(text) if len(text) == 10 else None
    if day is None:
        raise IncorrectLookupParameters(f"Not a date: {text!r}")
    start = datetime.combine(day, time.min, tzinfo=UTC)
    return start + timedelta(days=1, microseconds=-1) if end else start


class KindFilter(admin.SimpleListFilter):
    """Reads of a person's data, refused actions, or changes: the first split a
    data-protection officer makes of the trail."""

    title = "kind"
    parameter_name = "kind"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [
            ("read", "reads of a person's data"),
            ("refused", "refused actions"),
            ("change", "changes"),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() in ("read", "refused"):
            return queryset.filter(action__startswith=f"{self.value()}.")
        if self.value() == "change":
            return queryset.exclude(action__startswith="read.").exclude(
                action__startswith="refused."
            )
        return queryset


@admin.register(AuditEvent, site=site)
class AuditEventAdmin(ScopedModelAdmin):
    tenant_path = "tenant"
    change_list_template = "admin/atlas/audit_change_list.html"
    list_display = [
        "time",
        "action",
        "actor_type",
        "actor_label",
        "tenant",
        "subject_user",
        "target_id",
        "request_link",
    ]
    list_filter = [
        KindFilter,
        TimeRangeFilter,
        ("tenant", admin.RelatedOnlyFieldListFilter),
        "actor_type",
        ("actor_label", admin.AllValuesFieldListFilter),
        "action",
        ("subject_user", admin.RelatedOnlyFieldListFilter),
    ]
    list_select_related = ["tenant", "subject_user"]
    search_fields = ["request_id", "actor_label", "target_id", "action"]
    filter_lookups = ("request_id",)  # the request id column links to its events
    date_hierarchy = "created_at"
    fields = (
        "created_at",
        "request_id",
        "actor_type",
        "actor_id",
        "actor_label",
        "tenant",
        "subject_user",
        "action",
        "target_type",
        "target_id",
        "metadata",
    )
    readonly_fields = fields
    actions = None

    def get_list_display(self, request: HttpRequest) -> Any:
        """No tenant column for an operator of one tenant: it would say the same on every row
        and push the request ids out of view."""
        columns = list(super().get_list_display(request))
        scope = request_scope(request)
        if scope is not None and scope.tenant_id is not None:
            columns.remove("tenant")
        return columns

    @admin.display(description="time (UTC)", ordering="created_at")
    def time(self, event: AuditEvent) -> str:
        """To the second (Django's default format stops at the minute)."""
        return format_html(
            '<time datetime="{}">{}</time>',
            event.created_at.isoformat(),
            event.created_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S"),
        )

    @admin.display(description="request id", ordering="request_id")
    def request_link(self, event: AuditEvent) -> str:
        """The request id; a click shows every event of that request."""
        if not event.request_id:
            return "—"
        return format_html(
            '<a href="?{}" title="All events of this request"><code>{}</code></a>',
            urlencode({"request_id": event.request_id}),
            event.request_id,
        )

    def get_urls(self) -> list[URLPattern]:
        export = self.admin_site.admin_view(self.export_csv)
        own = [path("export.csv", export, name="tenants_auditevent_export")]
        return [*own, *super().get_urls()]

    def filtered_queryset(self, request: HttpRequest) -> QuerySet[AuditEvent]:
        """Exactly the rows the list page shows for this query string (every page of them)."""
        changelist = self.get_changelist_instance(request)
        return changelist.get_queryset(request)

    def export_csv(self, request: HttpRequest) -> HttpResponse:
        """The filtered view as CSV: same filters, same order, all pages."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        refusal = bad_query_string(request)
        if refusal is not None:
            return refusal
        # Built whole, not streamed: the ASGI handler would buffer a synchronous stream anyway.
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        try:
            with transaction.atomic():
                rows = self.filtered_queryset(request).select_related("tenant", "subject_user")
                csv.writer(response).writerows(_csv_rows(rows))
        except UNREADABLE_FILTER as exc:
            return filter_refused(exc)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        response["Content-Disposition"] = f'attachment; filename="audit-{stamp}.csv"'
        return response


def _csv_rows(rows: QuerySet[AuditEvent]) -> Iterator[list[str]]:
    yield CSV_COLUMNS
    for event in rows.iterator(chunk_size=500):
        values = [
            event.created_at.isoformat(),
            event.request_id,
            event.actor_type,
            event.actor_id,
            event.actor_label,
            str(event.tenant_id or ""),
            event.tenant.slug if event.tenant else "",
            str(event.subject_user_id or ""),
            event.subject_user.external_id if event.subject_user else "",
            event.action,
            event.target_type,
            event.target_id,
            json.dumps(event.metadata, sort_keys=True),
        ]
        yield [_cell(value) for value in values]


def _cell(value: str) -> str:
    """Spreadsheet-safe: a cell that a spreadsheet would run as a formula is quoted."""
    return f"'{value}" if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value
