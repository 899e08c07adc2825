"""The knowledge graph in the admin: entities with their revisions and edges, reconcile runs
(plans and receipts). Tenant-scoped through ``ScopedModelAdmin``; read-only (the graph is the
agents' own notes: operators read it, they do not edit it)."""

from __future__ import annotations

from django.contrib import admin

from knowledge.models import Edge, Entity, ReconcileRun, Revision
from tenants.admin.base import ReadOnlyInline, ScopedModelAdmin
from tenants.admin.site import site


class ScopedInline(ReadOnlyInline):
    """Rows of an entity whose page the operator already reached through its scoped admin."""


class RevisionInline(ScopedInline):
    model = Revision
    fields = (
        "number",
        "kind",
        "version",
        "base_version",
        "machine",
        "changed",
        "status",
        "title",
        "edges_added",
        "edges_removed",
        "created_at",
    )
    readonly_fields = fields
    ordering = ["number"]


class EdgeInline(ScopedInline):
    model = Edge
    fk_name = "source"
    fields = ("label", "target", "added_at", "removed_at")
    readonly_fields = fields


@admin.register(Entity, site=site)
class EntityAdmin(ScopedModelAdmin):
    tenant_path = "user__tenant"
    subject_path = "user"
    list_display = [
        "key",
        "title",
        "type",
        "status",
        "project",
        "user",
        "version",
        "conflicted",
        "deleted_at",
        "updated_at",
    ]
    list_select_related = ["user__tenant", "project"]
    list_filter = ["type", "status", "conflicted", ("deleted_at", admin.EmptyFieldListFilter)]
    search_fields = ["key", "title", "path", "user__external_id"]
    fields = (
        "user",
        "project",
        "key",
        "type",
        "title",
        "status",
        "priority",
        "initiative",
        "tags",
        "path",
        "content_hash",
        "version",
        "indexed_version",
        "conflicted",
        "deleted_at",
        "created_at",
        "updated_at",
        "status_changed_at",
        "front_matter",
        "body",
    )
    readonly_fields = fields
    inlines = [EdgeInline, RevisionInline]
    actions = None


@admin.register(ReconcileRun, site=site)
class ReconcileRunAdmin(ScopedModelAdmin):
    tenant_path = "user__tenant"
    subject_path = "user"
    list_display = [
        "id",
        "project",
        "user",
        "status",
        "files",
        "entities_under_roots",
        "forced",
        "created_at",
        "applied_at",
    ]
    list_select_related = ["user__tenant", "project"]
    list_filter = ["status", "forced"]
    fields = (
        "id",
        "user",
        "project",
        "status",
        "roots",
        "manifest_hash",
        "files",
        "entities_under_roots",
        "candidates",
        "forced",
        "created_at",
        "expires_at",
        "applied_at",
        "deleted",
    )
    readonly_fields = fields
    actions = None
