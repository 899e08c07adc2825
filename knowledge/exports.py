"""knowledge's sections of the user export (``tenants.exports``): the user's entities with
their text, every revision, every edge (current and removed), reconcile runs and the token use
of narrated handoffs, as the erasure of the user deletes them."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from knowledge.api import serializers as s
from knowledge.models import Edge, Entity, HandoffNarration, ReconcileRun, Revision
from tenants.exports import in_batches, register_export


class EntityExportOut(s.EntityOut):
    front_matter = serializers.JSONField(help_text="The parsed front matter.")
    seen_by = serializers.JSONField(help_text="Per machine key, the last version it saw.")
    body = serializers.CharField(allow_blank=True, help_text="The body, as written.")


class RevisionExportOut(s.RevisionOut):
    project = serializers.CharField(source="entity.project.key", help_text="The project's key.")
    entity = serializers.CharField(source="entity.key", help_text="The entity's key.")
    front_matter = serializers.JSONField(help_text="Front matter in this revision.")
    body = serializers.CharField(allow_blank=True, help_text="Body in this revision.")


class EdgeExportOut(serializers.Serializer[Edge]):
    project = serializers.CharField(source="project.key", help_text="The project's key.")
    source = serializers.CharField(source="source.key", help_text="The entity it leaves.")  # type: ignore[assignment]
    label = serializers.CharField(help_text="blocked_by | depends_on | part_of | relates_to.")  # type: ignore[assignment]
    target = serializers.CharField(help_text="The target as written.")
    added_at = serializers.DateTimeField(help_text="Added by the revision of that time.")
    removed_at = serializers.DateTimeField(allow_null=True, help_text="Removed (null: current).")


class NarrationExportOut(serializers.Serializer[HandoffNarration]):
    project = serializers.CharField(source="project.key", help_text="The project's key.")
    prompt_tokens = serializers.IntegerField(help_text="Tokens sent to the chat model.")
    completion_tokens = serializers.IntegerField(help_text="Tokens it answered with.")
    created_at = serializers.DateTimeField(help_text="When.")


SECTIONS: tuple[tuple[str, Any, type[serializers.Serializer[Any]], str], ...] = (
    (
        "entities",
        lambda user: in_batches(Entity.objects.for_caller(user).select_related("project")),
        EntityExportOut,
        "The knowledge graph's entities (tombstoned ones too), with their text.",
    ),
    (
        "entity_revisions",
        lambda user: in_batches(
            Revision.objects.for_caller(user).select_related("entity__project")
        ),
        RevisionExportOut,
        "Every revision of the user's entities (conflicting writes included).",
    ),
    (
        "entity_edges",
        lambda user: in_batches(Edge.objects.for_caller(user).select_related("project", "source")),
        EdgeExportOut,
        "Every edge from the user's entities, removed ones too.",
    ),
    (
        "reconcile_runs",
        lambda user: in_batches(ReconcileRun.objects.for_caller(user).select_related("project")),
        s.ReconcileRunOut,
        "Reconcile plans and receipts of the user's projects.",
    ),
    (
        "handoff_narrations",
        lambda user: in_batches(
            HandoffNarration.objects.for_caller(user).select_related("project")
        ),
        NarrationExportOut,
        "Narrated handoffs: token use only (the text is never kept).",
    ),
)


def register() -> None:
    for name, rows, shape, help_text in SECTIONS:
        register_export(name, rows=rows, shape=shape, help_text=help_text)
