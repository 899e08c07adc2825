"""The Atlas admin site: only Atlas operators (or superusers) get in."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.contrib.auth.models import User as Account
from django.contrib.contenttypes import views as contenttype_views
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseNotAllowed,
    HttpResponseRedirect,
)
from django.template.response import TemplateResponse
from django.urls import URLPattern, URLResolver, path, reverse

from tenants.admin.overview import overview_columns
from tenants.models import Tenant
from tenants.scoping import request_scope
from tenants.services.audit import audit_read

MAX_DASHBOARD_LINKS = 20
OVERVIEW_PAGE_SIZE = 100  # tenants per page of the platform overview (by name, then id)
ACCOUNTS = "Operator accounts"  # Django's users: who signs in here (the memory subjects: End users)

# The index and the sidebar, grouped by what operators do (app label, model name) -> section;
# an app's model not named here goes by its app label alone (its app's section), then "Other".
SECTIONS = (
    "Tenants and people",
    "Memory",
    "Erasure",
    "Audit",
    "Agents and knowledge",
    "Other",
)
SECTION_OF = {
    ("tenants", "Tenant"): "Tenants and people",
    ("tenants", "User"): "Tenants and people",
    ("tenants", "Operator"): "Tenants and people",
    ("tenants", "PlatformToken"): "Tenants and people",
    ("tenants", "ScopedKey"): "Tenants and people",
    ("auth", "User"): "Tenants and people",
    ("tenants", "AuditEvent"): "Audit",
    ("consolidation", None): "Memory",
    ("erasure", None): "Erasure",
    ("agents", None): "Agents and knowledge",
    ("knowledge", None): "Agents and knowledge",
}
# Order inside "Tenants and people": what an operator reaches for first.
MODEL_ORDER = ["Tenant", "User", "Operator", "PlatformToken", "ScopedKey"]


class AtlasAdminSite(admin.AdminSite):
    site_header = "Atlas administration"
    site_title = "Atlas"
    index_title = "Tenants, end users, memory, erasure and audit"
    site_url = None  # Atlas has no public site: no "View site" link to a 404

    def admin_view(self, view: Callable[..., Any], cacheable: bool = False) -> Any:
        """Django's, plus: a page or action an operator was refused (403) is an audit event
        (``refused.page``, once per operator and path per burst window)."""

        def audited(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
            try:
                return view(request, *args, **kwargs)
            except PermissionDenied:
                scope = request_scope(request)
                tenant = None
                if scope is not None and scope.tenant_id is not None:
                    tenant = Tenant.objects.filter(pk=scope.tenant_id).first()
                audit_read(
                    action="refused.page",
                    tenant=tenant,
                    subject_user=None,
                    target_type="admin.page",
                    target_id=request.path,
                    metadata={"method": request.method or "", "path": request.path[:300]},
                    burst=(request.method or "", request.path),
                )
                raise

        audited.__name__ = getattr(view, "__name__", "view")
        audited.__dict__.update(getattr(view, "__dict__", {}))
        return super().admin_view(audited, cacheable)

    def has_permission(self, request: HttpRequest) -> bool:
        return bool(super().has_permission(request)) and request_scope(request) is not None

    def index(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        """A tenant's operator lands on their tenant's dashboard; a platform admin on the
        index, whose first section links every tenant's dashboard."""
        scope = request_scope(request)
        if scope is not None and scope.tenant_id is not None:
            dashboard = reverse(f"{self.name}:tenants_tenant_dashboard", args=[scope.tenant_id])
            return HttpResponseRedirect(dashboard)
        response: HttpResponse = super().index(request, extra_context)
        return response

    def get_urls(self) -> list[URLResolver | URLPattern]:
        """Django's, with its "view on site" redirect answering 404 for any id that cannot be
        a row (Django's lets a UUID field's ValidationError through: a 500)."""
        urls: list[URLResolver | URLPattern] = super().get_urls()
        redirect = path(
            "r/<path:content_type_id>/<path:object_id>/",
            self.admin_view(view_on_site),
            name="view_on_site",
        )
        overview = path("overview/", self.admin_view(self.overview_view), name="overview")
        urls = [redirect if getattr(u, "name", None) == "view_on_site" else u for u in urls]
        return [overview, *urls]

    def overview_view(self, request: HttpRequest) -> HttpResponse:
        """The platform overview (platform admins only): a row per tenant, a column per feature
        (``overview.COLUMNS``), each column read for every row at once."""
        scope = request_scope(request)
        if scope is None or not scope.is_platform_admin:
            raise PermissionDenied
        if request.method not in ("GET", "HEAD"):
            return HttpResponseNotAllowed(["GET"])
        # Paged: every column is read for the page's tenants only (one query per column,
        # whatever the number of tenants), and every tenant is on exactly one page (a stable
        # order: names may repeat). A page number that is no page shows the nearest one.
        pages = Paginator(scope.tenants().order_by("name", "pk"), OVERVIEW_PAGE_SIZE)
        page = pages.get_page(request.GET.get("page"))
        tenants = list(page.object_list)
        columns = overview_columns(tenants)
        rows = [
            (tenant, [column.cells.get(tenant.pk, "") for column in columns]) for tenant in tenants
        ]
        context = {
            **self.each_context(request),
            "title": "Platform overview",
            "columns": columns,
            "rows": rows,
            "page": page,
            "first_row": page.start_index(),
            "last_row": page.end_index(),
            "tenant_count": pages.count,
        }
        return TemplateResponse(request, "admin/atlas/overview.html", context)

    def get_app_list(self, request: HttpRequest, app_label: str | None = None) -> list[Any]:
        """The models grouped by what operators do (``SECTIONS``), with a "Dashboards" section
        first (index and sidebar alike); an app's own index page stays Django's."""
        apps: list[Any] = super().get_app_list(request, app_label)
        for app in apps:  # Django's accounts are the operators' logins, not end users
            for model in app["models"]:
                if model.get("model") is Account:
                    model["name"] = ACCOUNTS
        scope = request_scope(request)
        if app_label is not None or scope is None:
            return apps
        apps = grouped(apps)
        links = [
            {
                "name": f"{tenant.name}: dashboard",
                "object_name": "dashboard",
                "admin_url": reverse(f"{self.name}:tenants_tenant_dashboard", args=[tenant.pk]),
                "view_only": True,
                "perms": {"view": True},
            }
            for tenant in scope.tenants().order_by("name")[:MAX_DASHBOARD_LINKS]
        ]
        if scope.is_platform_admin:
            overview = {
                "name": "Platform overview",
                "object_name": "overview",
                "admin_url": reverse(f"{self.name}:overview"),
                "view_only": True,
                "perms": {"view": True},
            }
            links = [overview, *links]
        if not links:
            return apps
        board = {"name": "Dashboards", "app_label": "dashboards", "app_url": links[0]["admin_url"]}
        return [{**board, "has_module_perms": True, "models": links}, *apps]


def _section(app_label: str, model: dict[str, Any]) -> str:
    name = model["object_name"]
    return SECTION_OF.get((app_label, name)) or SECTION_OF.get((app_label, None)) or "Other"


def grouped(apps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Django's app list regrouped into ``SECTIONS`` (empty sections left out)."""
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in SECTIONS}
    for app in apps:
        for model in app["models"]:
            rows[_section(app["app_label"], model)].append(model)
    rank = {name: i for i, name in enumerate(MODEL_ORDER)}
    rows["Tenants and people"].sort(key=lambda m: rank.get(m["object_name"], len(rank)))
    return [
        {
            "name": name,
            "app_label": name.lower().replace(" ", "-"),
            "app_url": models[0]["admin_url"],
            "has_module_perms": True,
            "models": models,
        }
        for name, models in rows.items()
        if models
    ]


site = AtlasAdminSite(name="admin")


def view_on_site(request: HttpRequest, content_type_id: str, object_id: str) -> HttpResponse:
    try:
        response: HttpResponse = contenttype_views.shortcut(request, content_type_id, object_id)
    except ValidationError as exc:
        raise Http404("No such object.") from exc
    return response
