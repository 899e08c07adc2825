"""The audit log: read-only, filterable; no add, change or delete for anyone."""

from __future__ import annotations

from django.contrib import admin

from tenants.admin.base import ScopedModelAdmin
from tenants.admin.site import site
from tenants.models import AuditEvent


@admin.register(AuditEvent, site=site)
class AuditEventAdmin(ScopedModelAdmin):
    tenant_path = "tenant"
    list_display = [
        "created_at",
        "action",
        "actor_type",
        "actor_label",
        "tenant",
        "subject_user",
        "target_id",
        "request_id",
    ]
    list_filter = [
        "action",
        "actor_type",
        ("tenant", admin.RelatedOnlyFieldListFilter),
        ("subject_user", admin.RelatedOnlyFieldListFilter),
        ("created_at", admin.DateFieldListFilter),
    ]
    list_select_related = ["tenant", "subject_user"]
    search_fields = ["request_id", "actor_label", "target_id", "action"]
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
