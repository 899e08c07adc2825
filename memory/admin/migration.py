"""Moving a tenant from the embedded store to Elasticsearch from the admin (platform admins):
a confirmation page with what will move (per type, source and target), then the run and its
result. The same service as ``manage.py memory_migrate``; it runs outside any transaction (its
network calls must not hold rows), and a refusal is an admin message, never a 500."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from atlas_platform.exceptions import AtlasError
from memory.services.migration import tenant_backend_migrate, tenant_backend_migration_plan
from tenants.models import Tenant

if TYPE_CHECKING:
    from tenants.admin.tenants import TenantAdmin

TEMPLATE = "admin/atlas/backend_migration.html"


def migration_urls(model_admin: TenantAdmin) -> list[URLPattern]:
    def view(request: HttpRequest, pk: int) -> HttpResponse:
        return migration_view(model_admin, request, pk)

    wrapped = model_admin.admin_site.admin_view(view)
    return [path("<int:pk>/migrate/", wrapped, name="tenants_tenant_migrate")]


def migration_view(model_admin: TenantAdmin, request: HttpRequest, pk: int) -> HttpResponse:
    """GET: what would move. POST (confirmed): move, verify, switch; the result page."""
    if not model_admin.has_platform_permission(request):
        raise PermissionDenied
    tenant = model_admin.get_queryset(request).filter(pk=pk).first()
    if tenant is None:
        raise Http404("No such tenant.")
    source = Path(settings.ATLAS_EMBEDDED_PATH)
    context: dict[str, Any] = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": f"{tenant.name}: move memories to Elasticsearch",
        "tenant": tenant,
    }
    if request.method == "POST" and request.POST.get("confirmed") == "yes":
        try:
            report = tenant_backend_migrate(tenant=tenant, source_path=source)
        except AtlasError as exc:
            model_admin.message_user(request, exc.message, messages.ERROR)
            return HttpResponseRedirect(request.path)
        if report.verified and not report.key_errors:
            done = f"{tenant.name}: every memory verified, mode {report.mode}."
            model_admin.message_user(request, done, messages.SUCCESS)
        else:
            unfinished = f"{tenant.name}: not finished; run it again."
            model_admin.message_user(request, unfinished, messages.WARNING)
        return TemplateResponse(request, TEMPLATE, {**context, "report": report})
    try:
        plan = tenant_backend_migration_plan(tenant=tenant, source_path=source)
    except AtlasError as exc:
        model_admin.message_user(request, exc.message, messages.ERROR)
        return TemplateResponse(request, TEMPLATE, context)
    rows = [(kind, n, plan.on_target[kind]) for kind, n in plan.in_source.items()]
    return TemplateResponse(request, TEMPLATE, {**context, "plan": plan, "rows": rows})


@admin.action(description="Move memories to Elasticsearch (asks first)", permissions=["platform"])
def migrate_backend(
    model_admin: TenantAdmin, request: HttpRequest, queryset: QuerySet[Tenant]
) -> HttpResponse | None:
    tenants = list(queryset[:2])
    if len(tenants) != 1:
        model_admin.message_user(
            request, "Choose one tenant: a migration runs for one tenant at a time.", messages.ERROR
        )
        return None
    return HttpResponseRedirect(reverse("admin:tenants_tenant_migrate", args=[tenants[0].pk]))


@admin.display(description="memory backend")
def backend_migration(tenant: Tenant) -> str:
    return format_html(
        '<a href="{}" id="migrate-link">Move memories to Elasticsearch…</a> '
        '<span class="atlas-muted">(shows what will move first; resumable)</span>',
        reverse("admin:tenants_tenant_migrate", args=[tenant.pk]),
    )
