"""Consolidation runs in the admin: read-only, tenant-scoped, with token use per tenant and the
model status (or why consolidation is off) on top."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse

from consolidation.llm import model_configured, model_status
from consolidation.models import ConsolidationRun
from consolidation.selectors import token_usage_by_tenant
from consolidation.services.triggers import consolidation_request
from tenants.admin.base import ScopedModelAdmin, extend_admin
from tenants.admin.site import site
from tenants.admin.tenants import TenantAdmin
from tenants.admin.users import UserAdmin, extend_user_pages, external_id
from tenants.models import Tenant, User


@admin.register(ConsolidationRun, site=site)
class ConsolidationRunAdmin(ScopedModelAdmin):
    tenant_path = "tenant"
    list_display = [
        "id",
        "created_at",
        "tenant",
        "user",
        "trigger",
        "status",
        "episodes_in",
        "facts_written",
        "procedures_written",
        "procedures_updated",
        "duplicates_dropped",
        "tokens",
        "duration",
    ]
    list_filter = ["status", "trigger", ("tenant", admin.RelatedOnlyFieldListFilter)]
    list_select_related = ["tenant", "user__tenant"]
    search_fields = ["user__external_id"]
    fields = (
        "tenant",
        "user",
        "trigger",
        "status",
        "error",
        "window_start",
        "window_end",
        "window_episode_ids",
        "episodes_in",
        "facts_in",
        "procedures_in",
        "candidates",
        "facts_written",
        "supersessions",
        "procedures_written",
        "procedures_updated",
        "duplicates_dropped",
        "unsupported_dropped",
        "low_confidence_dropped",
        "model",
        "model_calls",
        "attempts",
        "prompt_tokens",
        "completion_tokens",
        "created_at",
        "started_at",
        "finished_at",
    )
    readonly_fields = fields
    actions = None

    @admin.display(description="tokens")
    def tokens(self, run: ConsolidationRun) -> int:
        return run.tokens_used

    @admin.display(description="duration")
    def duration(self, run: ConsolidationRun) -> str:
        ms = run.duration_ms
        return "—" if ms is None else f"{ms / 1000:.1f} s"

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        level = messages.INFO if model_configured() else messages.WARNING
        self.message_user(request, model_status(), level)
        scope = self.scope(request)
        if scope is not None:
            for name, usage in token_usage_by_tenant(scope.tenants()).items():
                self.message_user(
                    request,
                    f"{name}: {usage.total_tokens} tokens in {usage.runs} runs "
                    f"({usage.prompt_tokens} prompt, {usage.completion_tokens} completion).",
                    messages.INFO,
                )
        return super().changelist_view(request, extra_context)


@admin.action(description="Consolidate memories now", permissions=["act"])
def consolidate(model_admin: UserAdmin, request: HttpRequest, queryset: QuerySet[User]) -> None:
    model_admin.each(
        request,
        queryset,
        lambda u: consolidation_request(user=u, trigger="on_demand"),
        "Consolidation queued for",
        label=external_id,
    )


@admin.display(description="consolidation model")
def consolidation_model(tenant: Tenant) -> str:
    return model_status()


extend_user_pages(actions=[consolidate])
extend_admin(TenantAdmin, fields=[consolidation_model])
