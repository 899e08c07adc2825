"""The base of every Atlas admin page: tenant scoping, role permissions, service-backed adds.

Scoping lives here once. A subclass names the path from its model to the tenant
(``tenant_path``) and everything else — list, detail, filters, actions, foreign-key choices —
goes through ``OperatorScope``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.options import IncorrectLookupParameters
from django.core.exceptions import FieldDoesNotExist, PermissionDenied, ValidationError
from django.db import DataError
from django.db.models import Model, QuerySet
from django.db.models.constants import LOOKUP_SEP
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.template.response import TemplateResponse

from atlas_platform.exceptions import AtlasError
from tenants.models import Tenant, User
from tenants.scoping import OperatorScope, request_scope
from tenants.services.audit import audit_read


class ScopedForm(forms.Form):
    """A form whose tenant / user choices are limited to the operator's scope."""

    fixed_tenant: Tenant | None = None  # the one tenant, shown rather than picked
    required_css_class = "required"  # bold labels, as on Django's own forms

    def __init__(self, *args: Any, scope: OperatorScope, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.scope = scope
        if "tenant" in self.fields:
            tenants = scope.tenants().filter(status=Tenant.Status.ACTIVE)
            self.fields["tenant"].queryset = tenants  # type: ignore[attr-defined]
            if len(only := list(tenants[:2])) == 1:  # a one-tenant admin need not pick it
                self.fields["tenant"].initial = only[0].pk
                if not scope.is_platform_admin:  # a tenant's own operator: nothing to pick
                    self.fields["tenant"].widget = forms.HiddenInput()
                    self.fixed_tenant = only[0]
        if "user" in self.fields:
            users = User.objects.select_related("tenant").filter(status=User.Status.ACTIVE)
            self.fields["user"].queryset = scope.restrict(users, "tenant")  # type: ignore[attr-defined]


class ReadOnlyInline(admin.TabularInline):  # type: ignore[type-arg]
    """A tabular inline that only shows rows: set ``model`` and ``fields``."""

    extra = 0
    can_delete = False

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Rows of an object whose page the operator already reached through its scoped admin
        # (Django's own check asks for a model permission no operator holds).
        return request_scope(request) is not None

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


# What a filter value the query cannot take raises: when the filter is built (Python's date and
# int conversions), or when the database runs it (PostgreSQL refusing a NUL or an overflow).
UNREADABLE_FILTER = (
    IncorrectLookupParameters,
    ValidationError,
    DataError,
    ValueError,
    OverflowError,
    TypeError,
    IndexError,
)


def bad_query_string(request: HttpRequest) -> HttpResponse | None:
    """A 400 for a query string with a NUL character (no text column can hold one)."""
    for key, values in request.GET.lists():
        if "\x00" in key or any("\x00" in v for v in values):
            return HttpResponseBadRequest(
                "A filter value contains a NUL character; remove it.", content_type="text/plain"
            )
    return None


def filter_refused(exc: BaseException) -> HttpResponse:
    """The 400 for a filter value the list cannot apply (the value itself is not echoed)."""
    return HttpResponseBadRequest(
        "A filter in the address cannot be applied (a value out of range or of the wrong "
        "kind); change or remove it.",
        content_type="text/plain",
    )


class ScopedModelAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Tenant-scoped admin: rows, choices and actions limited to the operator's tenants.

    Auditors get view-only pages; nothing is ever deleted through the admin; adds (when the page
    has them) run a service through ``add_form_class`` / ``perform_add``.
    """

    tenant_path: ClassVar[str]
    # Query-string lookups a page offers besides its list filters (links to a filtered view).
    filter_lookups: ClassVar[tuple[str, ...]] = ()
    add_form_class: ClassVar[type[ScopedForm] | None] = None
    add_title: ClassVar[str] = ""
    # The path from a row to the end user whose data it is (``user``, ``agent__user``): set,
    # each detail page shown is a ``read.record`` audit event (bursts coalesced).
    subject_path: ClassVar[str] = ""
    actions_on_bottom = True

    # --- changelist lookups ---------------------------------------------------------------
    def declared_lookups(self, request: HttpRequest | None) -> set[str]:
        """The fields a changelist may be filtered on: its list filters and date hierarchy."""
        from django.contrib.admin.filters import ListFilter

        list_filter = self.get_list_filter(request) if request is not None else self.list_filter
        declared = set(self.filter_lookups)
        if self.date_hierarchy:
            declared.add(self.date_hierarchy)
        for item in list_filter:
            if isinstance(item, (list, tuple)):
                declared.add(str(item[0]))
            elif isinstance(item, str):
                declared.add(item)
            elif isinstance(item, type) and issubclass(item, ListFilter):
                declared.add(getattr(item, "parameter_name", "") or "")
        return {d for d in declared if d}

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest | None = None) -> bool:
        """Only the declared filters, on every page: a lookup on any other field
        (``?secret_hash__startswith=``) would let an operator rebuild what a page never shows.
        Parameters that name no field (a filter's own, like a time range's) are the filters'."""
        field = lookup.split(LOOKUP_SEP, 1)[0]
        try:
            self.model._meta.get_field(field)
        except FieldDoesNotExist:
            return super().lookup_allowed(lookup, value, request)
        declared = self.declared_lookups(request)
        if not any(lookup == d or lookup.startswith(d + LOOKUP_SEP) for d in declared):
            return False
        if lookup.endswith(LOOKUP_SEP + "range") and len(str(value).split(",")) != 2:
            return False  # a range is two bounds; one would break the query itself
        return super().lookup_allowed(lookup, value, request)

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        """The list page, with a filter value the database or Python cannot take (a NUL byte,
        a year past 9999, a malformed date) answered as a 400, never a 500. The page is
        rendered here, so a failure of its query is caught here."""
        refusal = bad_query_string(request)
        if refusal is not None:
            return refusal
        try:
            response = super().changelist_view(request, extra_context)
            if isinstance(response, TemplateResponse):
                response.render()  # the query runs here: its errors are caught here too
        except UNREADABLE_FILTER as exc:
            return filter_refused(exc)
        return response

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        response: HttpResponse = super().change_view(request, object_id, form_url, extra_context)
        if self.subject_path and response.status_code == 200:
            self._audit_record_read(request, object_id)
        return response

    def _audit_record_read(self, request: HttpRequest, object_id: str) -> None:
        obj = self.get_object(request, object_id)
        if obj is None:
            return
        subject: Any = obj
        for part in self.subject_path.split("__"):
            subject = getattr(subject, part, None)
        if not isinstance(subject, User):
            return
        label = obj._meta.label_lower
        audit_read(
            action="read.record",
            tenant=subject.tenant,
            subject_user=subject,
            target_type=label,
            target_id=str(obj.pk),
            burst=(label, str(obj.pk)),
        )

    # --- scoping ------------------------------------------------------------------------
    def scope(self, request: HttpRequest) -> OperatorScope | None:
        return request_scope(request)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset = super().get_queryset(request)
        scope = self.scope(request)
        if scope is None:
            return queryset.none()
        return scope.restrict(queryset, self.tenant_path)

    def tenant_id_of(self, obj: Model) -> int | None:
        value: Any = obj
        for part in self.tenant_path.split("__") if self.tenant_path else []:
            value = getattr(value, part, None)
        return value.pk if value is not None else None

    def _covers(self, request: HttpRequest, obj: Model | None) -> bool:
        scope = self.scope(request)
        return scope is not None and (obj is None or scope.covers(self.tenant_id_of(obj)))

    # --- permissions by role ------------------------------------------------------------
    def has_module_permission(self, request: HttpRequest) -> bool:
        return self.scope(request) is not None

    def has_view_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return self._covers(request, obj)

    def has_act_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        """May run this page's state-changing actions (tenant admins and platform admins)."""
        scope = self.scope(request)
        return scope is not None and scope.can_act and self._covers(request, obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return self.add_form_class is not None and self.has_act_permission(request)

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        scope = self.scope(request)
        if scope is not None and db_field.related_model is Tenant:
            kwargs["queryset"] = scope.tenants()
        elif scope is not None and db_field.related_model is User:
            kwargs["queryset"] = scope.restrict(User.objects.all(), "tenant")
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    # --- adds through a service -------------------------------------------------------------
    def add_view(
        self, request: HttpRequest, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        scope = self.scope(request)
        if self.add_form_class is None or scope is None or not self.has_add_permission(request):
            raise PermissionDenied
        form = self.add_form_class(
            request.POST or None, scope=scope, initial=self.add_form_initial(request)
        )
        if request.method == "POST" and form.is_valid():
            try:
                return self.perform_add(request, form)
            except AtlasError as exc:
                form.add_error(None, exc.message)
        context = {
            **self.admin_site.each_context(request),
            "title": self.add_title or f"Add {self.opts.verbose_name}",
            "opts": self.opts,
            "form": form,
            **(extra_context or {}),
        }
        return TemplateResponse(request, "admin/atlas/service_form.html", context)

    def add_form_initial(self, request: HttpRequest) -> dict[str, Any]:
        """Hook: initial values of the add form (e.g. from a link's query string)."""
        return {}

    def perform_add(self, request: HttpRequest, form: Any) -> HttpResponse:
        raise NotImplementedError

    # --- helpers for actions ----------------------------------------------------------------
    def each(
        self,
        request: HttpRequest,
        objects: Iterable[Any],
        act: Callable[[Any], object],
        verb: str,
        *,
        label: Callable[[Any], str] = str,
        failure: str = "{label}: {message}",
    ) -> None:
        """The one bulk-action loop: ``act`` on each object, one service call each. An
        ``AtlasError`` is reported with ``failure`` (``{label}``, ``{message}``) and the loop
        goes on; a ``str`` that ``act`` returns is a warning about an object it did act on. The
        objects done are listed after ``verb``."""
        done, failed = [], []
        for obj in objects:
            try:
                warning = act(obj)
            except AtlasError as exc:
                failed.append(failure.format(label=label(obj), message=exc.message))
                continue
            done.append(label(obj))
            if isinstance(warning, str):
                failed.append(warning)
        self.report(request, done, failed, verb)

    def report(self, request: HttpRequest, done: list[str], failed: list[str], verb: str) -> None:
        if done:
            self.message_user(request, f"{verb}: {', '.join(done)}.", messages.SUCCESS)
        for failure in failed:
            self.message_user(request, failure, messages.ERROR)


def extend_admin(
    admin_class: type[admin.ModelAdmin],  # type: ignore[type-arg]
    *,
    columns: Sequence[Callable[[Any], Any]] = (),
    fields: Sequence[Callable[[Any], Any]] = (),
    actions: Sequence[Callable[..., None]] = (),
) -> None:
    """EXTENSION POINT: an app above tenants adds to one of tenants' admin pages from its own
    admin module: list columns and read-only change-page fields (functions of the object,
    decorated with ``admin.display``) and bulk actions (functions of ``(model_admin, request,
    queryset)``, decorated with ``admin.action``). Idempotent."""

    def added(present: Sequence[Any], new: Sequence[Any]) -> list[Any]:
        return [*present, *(item for item in new if item not in present)]

    admin_class.list_display = added(admin_class.list_display, columns)
    admin_class.fields = added(admin_class.fields or (), fields)
    admin_class.readonly_fields = added(admin_class.readonly_fields, fields)
    admin_class.actions = added(admin_class.actions or (), actions)
