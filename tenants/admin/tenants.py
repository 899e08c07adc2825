"""Tenants: one-form onboarding, tunables, suspend / reactivate."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Count, Model, QuerySet
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
)
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from atlas_platform.cluster import get_cluster
from tenants.admin.base import ScopedModelAdmin, extend_admin
from tenants.admin.confirm import confirmation
from tenants.admin.dashboard import dashboard_panels
from tenants.admin.forms import TenantOnboardForm
from tenants.admin.site import site
from tenants.models import Tenant
from tenants.services.tenants import (
    TUNABLE_FIELDS,
    tenant_onboard,
    tenant_reactivate,
    tenant_suspend,
    tenant_update,
)


def isolation_badge(tenant: Tenant) -> str:
    if tenant.isolation_is_weaker and get_cluster() is None:  # the embedded store's one mode
        return format_html(
            '<span title="{}">filter (embedded store)</span>',
            "To move to Elasticsearch with cluster-enforced isolation: set ATLAS_ES_URL, then "
            f"manage.py memory_migrate {tenant.slug}.",
        )
    if tenant.isolation_is_weaker:
        return format_html(
            '<span title="{}" class="atlas-alert">filter (weaker)</span>',
            "The cluster does not enforce per-user isolation; only Atlas's own filters do.",
        )
    return format_html('<span class="atlas-ok">{}</span>', "dls (cluster-enforced)")


@admin.register(Tenant, site=site)
class TenantAdmin(ScopedModelAdmin):
    tenant_path = ""
    add_form_class = TenantOnboardForm
    add_title = "Onboard a tenant"
    list_display = [
        "slug",
        "name",
        "status",
        "isolation",
        "user_count",
        "created_at",
        "dashboard_link",
    ]
    list_filter = ["status", "isolation_mode"]
    search_fields = ["slug", "name"]
    fields = [
        "slug",
        "status",
        "isolation",
        "dashboard_link",
        *TUNABLE_FIELDS,
        "created_at",
    ]
    readonly_fields = [
        "slug",
        "status",
        "isolation",
        "dashboard_link",
        "created_at",
    ]
    actions = ["suspend", "reactivate"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        queryset: QuerySet[Any] = super().get_queryset(request)
        annotated: QuerySet[Any] = queryset.annotate(user_total=Count("users"))
        return annotated

    def get_urls(self) -> list[URLPattern]:
        dashboard = self.admin_site.admin_view(self.dashboard_view)
        own = [path("<int:pk>/dashboard/", dashboard, name="tenants_tenant_dashboard")]
        added = [p for urls in TENANT_URLS for p in urls(self)]
        return [*own, *added, *super().get_urls()]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> list[Any]:
        """The change page's fields, less the platform admins' own for anyone else."""
        fields = list(super().get_fields(request, obj))
        if self.has_platform_permission(request):
            return fields
        hidden: list[Any] = list(PLATFORM_FIELDS)
        return [f for f in fields if f not in hidden]

    def dashboard_view(self, request: HttpRequest, pk: int) -> HttpResponse:
        """The tenant's dashboard (panels from ``dashboard.PANELS``); read-only."""
        tenant = self.get_queryset(request).filter(pk=pk).first()
        if tenant is None:
            raise Http404("No such tenant.")
        if request.method not in ("GET", "HEAD"):
            if not self.has_act_permission(request, tenant):
                raise PermissionDenied
            return HttpResponseNotAllowed(["GET"])
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": f"{tenant.name}: dashboard",
            "tenant": tenant,
            "isolation": isolation_badge(tenant),
            "panels": dashboard_panels(request, tenant),
        }
        return TemplateResponse(request, "admin/atlas/dashboard.html", context)

    @admin.display(description="dashboard")
    def dashboard_link(self, tenant: Tenant) -> str:
        url = reverse("admin:tenants_tenant_dashboard", args=[tenant.pk])
        return format_html('<a href="{}">dashboard</a>', url)

    @admin.display(description="isolation")
    def isolation(self, tenant: Tenant) -> str:
        return isolation_badge(tenant)

    @admin.display(description="users", ordering="user_total")
    def user_count(self, tenant: Tenant) -> int:
        return getattr(tenant, "user_total", 0)

    def has_add_permission(self, request: HttpRequest) -> bool:
        scope = self.scope(request)
        return scope is not None and scope.is_platform_admin

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return self.has_act_permission(request, obj)

    def has_suspend_permission(self, request: HttpRequest) -> bool:
        return self.has_add_permission(request)

    def has_platform_permission(self, request: HttpRequest) -> bool:
        """Platform admins only (actions with ``permissions=["platform"]``)."""
        return self.has_add_permission(request)

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        kwargs["fields"] = list(TUNABLE_FIELDS)
        return super().get_form(request, obj, change=change, **kwargs)

    def save_model(
        self, request: HttpRequest, obj: Any, form: forms.ModelForm[Tenant], change: bool
    ) -> None:
        current = Tenant.objects.get(pk=obj.pk)
        tenant_update(tenant=current, **{f: form.cleaned_data[f] for f in TUNABLE_FIELDS})

    def perform_add(self, request: HttpRequest, form: Any) -> HttpResponse:
        data = form.cleaned_data
        result = tenant_onboard(
            slug=data["slug"],
            name=data["name"],
            admin_username=data["admin_username"],
            admin_email=data["admin_email"],
            admin_password=data["admin_password"],
            user_external_ids=data["users"],
            isolation_mode=data.get("isolation_mode") or None,
        )
        keys = f", {len(result.keys)} scoped keys" if get_cluster() is not None else ""
        self.message_user(
            request,
            f"Onboarded {result.tenant.name}: admin {data['admin_username']}, "
            f"{len(result.users)} users{keys}, isolation {result.tenant.isolation_mode}.",
            messages.SUCCESS,
        )
        return HttpResponseRedirect(reverse("admin:tenants_tenant_change", args=[result.tenant.pk]))

    @admin.action(description="Suspend selected tenants", permissions=["suspend"])
    def suspend(self, request: HttpRequest, queryset: QuerySet[Tenant]) -> HttpResponse | None:
        page = confirmation(
            self,
            request,
            queryset,
            action="suspend",
            title="Suspend tenants",
            consequence="Every token of these tenants stops working at once (their agents get "
            "401 tenant_suspended) until a platform admin reactivates them; nothing is deleted.",
        )
        if page is not None:
            return page
        self.each(request, queryset, lambda t: tenant_suspend(tenant=t), "Suspended", label=_slug)
        return None

    @admin.action(description="Reactivate selected tenants", permissions=["suspend"])
    def reactivate(self, request: HttpRequest, queryset: QuerySet[Tenant]) -> None:
        self.each(
            request, queryset, lambda t: tenant_reactivate(tenant=t), "Reactivated", label=_slug
        )


def _slug(tenant: Tenant) -> str:
    return tenant.slug


# Pages and platform-admin-only change-page fields that apps above tenants add.
TENANT_URLS: list[Callable[[TenantAdmin], list[URLPattern]]] = []
PLATFORM_FIELDS: list[Callable[[Any], Any]] = []


def extend_tenant_pages(
    *,
    urls: Callable[[TenantAdmin], list[URLPattern]] | None = None,
    platform_fields: list[Callable[[Any], Any]] | None = None,
    actions: list[Callable[..., Any]] | None = None,
) -> None:
    """EXTENSION POINT: an app above tenants adds views under a tenant's admin pages (``urls``,
    a function of the TenantAdmin), read-only change-page fields only platform admins see, and
    bulk actions. Idempotent."""
    if urls is not None and urls not in TENANT_URLS:
        TENANT_URLS.append(urls)
    for item in platform_fields or []:
        if item not in PLATFORM_FIELDS:
            PLATFORM_FIELDS.append(item)
    extend_admin(TenantAdmin, fields=platform_fields or [], actions=actions or [])
