"""Entities (one per markdown note of a project), their revisions, their edges over time, and
reconcile runs (plan, then receipt)."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from agents.models import Project
from atlas_platform.scoping import CallerQuerySet
from tenants.models import User


def _doc_id() -> str:
    return uuid.uuid4().hex


class Entity(models.Model):
    """A markdown note of one of the user's projects, at its current version. ``deleted_at``:
    a tombstone (reconcile), restorable until ``ATLAS_KNOWLEDGE_RESTORE_DAYS`` later.
    ``conflicted``: a write from a stale base was kept as a conflict revision. ``doc_id`` is
    its searchable document in the memory store; ``indexed_version`` the version stored
    there (behind ``version`` when the store was down: ``entities_reindex`` catches up).
    ``aliases``: the names it had before it moved (``[{key, path}]``), so links written to an
    old name still resolve. ``seen_by``: per machine key, the last version that machine wrote
    or indexed (reconcile deletes only what the manifest's machine has seen)."""

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="entities")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="entities")
    key = models.CharField(max_length=200)
    type = models.CharField(max_length=50)
    title = models.CharField(max_length=500)
    status = models.CharField(max_length=50, blank=True)
    priority = models.CharField(max_length=50, blank=True)
    initiative = models.CharField(max_length=200, blank=True)
    tags = models.JSONField(default=list, blank=True)
    front_matter = models.JSONField(default=dict, blank=True)
    body = models.TextField(blank=True)
    path = models.CharField(max_length=500)
    stem = models.CharField(max_length=500, blank=True)  # file name, case-folded: [[wikilinks]]
    content_hash = models.CharField(max_length=64)
    version = models.PositiveIntegerField(default=1)
    conflicted = models.BooleanField(default=False)
    deleted_at = models.DateTimeField(null=True, blank=True)
    doc_id = models.CharField(max_length=32, default=_doc_id, unique=True)
    indexed_version = models.PositiveIntegerField(default=0)
    aliases = models.JSONField(default=list, blank=True)
    seen_by = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    status_changed_at = models.DateTimeField(default=timezone.now)

    owner = "user"  # the user whose rows these are (for_caller)
    objects = CallerQuerySet.as_manager()

    class Meta:
        ordering = ["project_id", "key"]
        verbose_name_plural = "entities"
        constraints = [
            models.UniqueConstraint(fields=["project", "key"], name="entity_key_unique_per_project")
        ]
        indexes = [
            models.Index(fields=["project", "path"]),
            models.Index(fields=["project", "stem"]),
            models.Index(fields=["user", "updated_at"]),
        ]

    def __str__(self) -> str:
        return self.key


class Revision(models.Model):
    """One change of an entity: what it became (title, status, front matter, body, hash,
    embedding for the semantic diff) and what changed. ``conflict`` revisions hold a write
    from a stale base that did not become current; ``moved`` ones a new path (and key)."""

    class Kind(models.TextChoices):
        CREATED = "created", "Created"
        UPDATED = "updated", "Updated"
        DELETED = "deleted", "Deleted"
        RESTORED = "restored", "Restored"
        CONFLICT = "conflict", "Conflict"
        MOVED = "moved", "Moved"

    entity = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="revisions")
    number = models.PositiveIntegerField()
    kind = models.CharField(max_length=10, choices=Kind.choices)
    version = models.PositiveIntegerField()
    base_version = models.PositiveIntegerField(null=True, blank=True)
    machine = models.CharField(max_length=128, blank=True)
    changed = models.JSONField(default=list, blank=True)
    title = models.CharField(max_length=500)
    status = models.CharField(max_length=50, blank=True)
    path = models.CharField(max_length=500)
    front_matter = models.JSONField(default=dict, blank=True)
    body = models.TextField(blank=True)
    content_hash = models.CharField(max_length=64)
    embedding = models.JSONField(null=True, blank=True)
    edges_added = models.JSONField(default=list, blank=True)
    edges_removed = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    owner = "entity__user"  # the user whose rows these are (for_caller)
    objects = CallerQuerySet.as_manager()

    class Meta:
        ordering = ["entity_id", "number"]
        constraints = [
            models.UniqueConstraint(fields=["entity", "number"], name="revision_number_unique")
        ]

    def __str__(self) -> str:
        return f"{self.entity_id}#{self.number} {self.kind}"


class Edge(models.Model):
    """A relationship from an entity, alive from ``added_at`` until ``removed_at`` (the times
    of the revisions that added and removed it). ``target`` is the reference as written (an
    entity key, a path relative to the project root, or a wikilink's name); whether it
    resolves is read from the project's entities at query time."""

    class Label(models.TextChoices):
        BLOCKED_BY = "blocked_by", "blocked by"
        DEPENDS_ON = "depends_on", "depends on"
        PART_OF = "part_of", "part of"
        RELATES_TO = "relates_to", "relates to"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    source = models.ForeignKey(Entity, on_delete=models.CASCADE, related_name="edges")
    label = models.CharField(max_length=16, choices=Label.choices)
    target = models.CharField(max_length=500)
    ref = models.CharField(max_length=500)  # the target case-folded: incoming edges by it
    added_at = models.DateTimeField(default=timezone.now)
    removed_at = models.DateTimeField(null=True, blank=True)

    owner = "source__user"  # the user whose rows these are (for_caller)
    objects = CallerQuerySet.as_manager()

    class Meta:
        ordering = ["source_id", "label", "target"]
        indexes = [
            models.Index(fields=["project", "ref"]),
            models.Index(fields=["source", "removed_at"]),
        ]

    def __str__(self) -> str:
        return f"{self.source_id} {self.label} {self.target}"


class ReconcileRun(models.Model):
    """A reconcile of one project: the plan (manifest hash, roots, the manifest's machine,
    candidates with the versions they had and why, moves, the missing entities kept and why)
    and, once applied, the receipt (what was tombstoned or moved, when)."""

    class Status(models.TextChoices):
        PLANNED = "planned", "Planned"
        APPLIED = "applied", "Applied"
        SUPERSEDED = "superseded", "Superseded"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="reconcile_runs")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    roots = models.JSONField(default=list)
    manifest_hash = models.CharField(max_length=64)
    files = models.PositiveIntegerField(default=0)
    entities_under_roots = models.PositiveIntegerField(default=0)
    machine = models.CharField(max_length=128, blank=True)
    candidates = models.JSONField(default=list)  # [{id, key, path, title, version, reason}]
    moves = models.JSONField(default=list, blank=True)  # [{id, key, path, to, version, reason}]
    kept = models.JSONField(default=list, blank=True)  # [{key, path, title, version, reason}]
    forced = models.BooleanField(default=False)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PLANNED)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    applied_at = models.DateTimeField(null=True, blank=True)
    deleted = models.JSONField(default=list, blank=True)  # keys tombstoned
    moved = models.JSONField(default=list, blank=True)  # [{from, to}] keys moved

    owner = "user"  # the user whose rows these are (for_caller)
    objects = CallerQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"reconcile {self.id} ({self.status})"


class HandoffNarration(models.Model):
    """A handoff brief narrated by the configured chat model: its token use, per tenant's
    user (what the tenant's consolidation model spent on handoffs). Never the text."""

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="handoff_narrations")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    owner = "user"  # the user whose rows these are (for_caller)
    objects = CallerQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"narration {self.pk}"
