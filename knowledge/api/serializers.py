"""Request and response shapes of the knowledge API (they are also the OpenAPI schema).

Inputs are ``agents.api.serializers.Input``: unknown fields are refused with a 400."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework import serializers

from agents.api.serializers import KEY, Input, _id
from atlas_platform.serializers import StrictCharField
from knowledge.models import Entity, ReconcileRun, Revision
from knowledge.parsing import ID_PATTERN, MAX_CONTENT, MAX_PATH

PROJECT = "The project's key (64 hex characters, from POST /users/{user_id}/projects)."


def _project(required: bool = True) -> serializers.RegexField:
    return serializers.RegexField(
        KEY, required=required, allow_null=not required, help_text=PROJECT
    )


def _words(help_text: str) -> serializers.ListField:
    return serializers.ListField(
        child=StrictCharField(max_length=50), required=False, max_length=20, help_text=help_text
    )


# --- writes -------------------------------------------------------------------------------
class EntityUpsertIn(Input):
    project_key = _project()
    path = StrictCharField(
        max_length=MAX_PATH, help_text="The note's path relative to the project root (posix)."
    )
    content = StrictCharField(
        max_length=MAX_CONTENT,
        trim_whitespace=False,
        allow_blank=True,
        help_text="The whole markdown file, front matter included.",
    )
    base_version = serializers.IntegerField(
        min_value=1,
        max_value=2**31 - 1,
        required=False,
        allow_null=True,
        default=None,
        help_text="The version this writer last got back (none: never indexed here).",
    )
    machine_key = _id("The machine writing (registered by a heartbeat).", required=False)
    content_hash = serializers.RegexField(
        r"^[0-9a-fA-F]{64}$",
        required=False,
        allow_null=True,
        help_text="SHA-256 of content (UTF-8), checked when given.",
    )
    moved_from = StrictCharField(
        max_length=MAX_PATH,
        required=False,
        allow_null=True,
        default=None,
        help_text="The path this file was moved from (`mv`, `git mv`): the entity there "
        "moves here, its history continued and its old key and path kept as aliases.",
    )


class RestoreIn(Input):
    project_key = _project()


class FileIn(Input):
    path = StrictCharField(max_length=MAX_PATH, help_text="Relative to the project root.")
    hash = serializers.RegexField(
        r"^[0-9a-fA-F]{64}$", required=False, default="", help_text="SHA-256 of the file."
    )
    id = serializers.RegexField(
        ID_PATTERN.pattern,
        required=False,
        help_text="Its front matter `id`, if it has one (a moved note is found by it).",
    )


class ReconcilePlanIn(Input):
    project_key = _project()
    roots = serializers.ListField(
        child=StrictCharField(max_length=MAX_PATH, allow_blank=True),
        min_length=1,
        max_length=50,
        help_text="The folders the manifest covers (relative; `` is the whole project).",
    )
    files = FileIn(
        many=True, help_text="Every markdown file present under the roots (at most 20000)."
    )
    force = serializers.BooleanField(
        default=False, help_text="Lift the mass-deletion guard (only that one)."
    )
    machine_key = _id(
        "The machine whose checkout this is: only entities whose current version it has "
        "seen (written or indexed) can be deleted.",
        required=False,
    )

    def validate_files(self, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if len(value) > 20_000:
            raise serializers.ValidationError("At most 20000 files.")
        return value


class ReconcileApplyIn(Input):
    plan_id = serializers.UUIDField(help_text="The plan's id, from the plan.")
    manifest_hash = serializers.RegexField(
        r"^[0-9a-f]{64}$", help_text="The manifest hash the plan answered."
    )


# --- queries ------------------------------------------------------------------------------
class EntityQueryIn(Input):
    project = _project()


class SearchIn(Input):
    query = StrictCharField(max_length=2000, help_text="What to look for.")
    project = _project(required=False)
    types = _words("Only these entity types.")
    statuses = _words("Only these statuses.")
    updated_since = serializers.DateTimeField(
        required=False, allow_null=True, help_text="Changed at or after."
    )
    updated_before = serializers.DateTimeField(
        required=False, allow_null=True, help_text="Changed before."
    )
    k = serializers.IntegerField(min_value=1, max_value=50, default=10, help_text="Results.")
    include_team = serializers.BooleanField(
        default=False, help_text="Also the tenant's team-visible projects."
    )


class RelatedIn(Input):
    project = _project()
    key = StrictCharField(
        max_length=500, help_text="The entity: its key, path, file name (stem) or title."
    )
    depth = serializers.IntegerField(min_value=1, max_value=2, default=1, help_text="1 or 2.")


class BlockersIn(Input):
    project = _project()
    stale_days = serializers.FloatField(
        min_value=0, max_value=3650, default=3, help_text="Blockers idle at least this long."
    )


class DiffIn(Input):
    project = _project()
    since = serializers.DateTimeField(help_text="From (ISO 8601; a date is its midnight UTC).")
    until = serializers.DateTimeField(help_text="To.")
    rewrite_threshold = serializers.FloatField(
        min_value=0.0001,
        max_value=2,
        default=0.25,
        help_text="Cosine distance above which an entity counts as rewritten.",
    )


class HandoffIn(Input):
    project = _project()
    hours = serializers.FloatField(
        min_value=0.01, max_value=2160, default=24, help_text="Recent changes window."
    )
    token_budget = serializers.IntegerField(
        min_value=100,
        max_value=32_000,
        required=False,
        help_text="Size of the brief in estimated tokens (characters / 4); default "
        "ATLAS_BRIEF_TOKENS (1500).",
    )
    machine_key = _id("This machine (its sessions are named 'this machine').", required=False)
    session_id = _id("The session starting now (never shown as the last one).", required=False)
    narrate = serializers.BooleanField(
        default=False, help_text="Add a narration by the configured chat model (off)."
    )
    output = serializers.ChoiceField(
        choices=["json", "markdown"], default="json", help_text="markdown: the brief only."
    )


# --- outputs ------------------------------------------------------------------------------
class EntityOut(serializers.Serializer[Entity]):
    key = serializers.CharField(help_text="Stable key.")
    project = serializers.CharField(source="project.key", help_text="The project's key.")
    type = serializers.CharField(help_text="Entity type.")
    title = serializers.CharField(help_text="Title.")
    status = serializers.CharField(help_text="Status (lowercase), or empty.")
    priority = serializers.CharField(help_text="Priority, or empty.")
    initiative = serializers.CharField(help_text="The initiative it is part of, or empty.")
    tags = serializers.ListField(child=serializers.CharField(), help_text="Tags.")
    path = serializers.CharField(help_text="Path relative to the project root.")
    aliases = serializers.JSONField(
        help_text="Its names before it moved, [{key, path}]: links to them resolve to it."
    )
    content_hash = serializers.CharField(help_text="SHA-256 of the file.")
    version = serializers.IntegerField(help_text="Current version (the next write's base).")
    conflicted = serializers.BooleanField(help_text="A stale write was kept as a conflict.")
    deleted_at = serializers.DateTimeField(allow_null=True, help_text="Tombstone time.")
    restorable_until = serializers.SerializerMethodField(help_text="Tombstone restorable until.")
    indexed = serializers.SerializerMethodField(help_text="Searchable at this version.")
    created_at = serializers.DateTimeField(help_text="Created.")
    updated_at = serializers.DateTimeField(help_text="Last changed.")
    status_changed_at = serializers.DateTimeField(help_text="Status last changed.")

    def get_restorable_until(self, entity: Entity) -> str | None:
        if entity.deleted_at is None:
            return None
        from datetime import timedelta

        until = entity.deleted_at + timedelta(days=settings.ATLAS_KNOWLEDGE_RESTORE_DAYS)
        return until.isoformat()

    def get_indexed(self, entity: Entity) -> bool:
        return entity.indexed_version >= entity.version


class EdgeViewOut(serializers.Serializer[Any]):
    label = serializers.CharField(help_text="blocked_by, blocks, depends_on, ...")  # type: ignore[assignment]
    direction = serializers.CharField(help_text="out | in")
    key = serializers.CharField(help_text="The other end (a key, or the target as written).")
    title = serializers.CharField(allow_null=True, help_text="Its title, if it exists.")
    resolved = serializers.BooleanField(help_text="The other end exists.")


class EntityDetailOut(EntityOut):
    front_matter = serializers.JSONField(help_text="The parsed front matter.")
    body = serializers.CharField(help_text="The body, as written.")
    edges = EdgeViewOut(many=True, source="edge_views", help_text="Current edges.")


class RevisionOut(serializers.Serializer[Revision]):
    number = serializers.IntegerField(help_text="1, 2, ... per entity.")
    kind = serializers.CharField(
        help_text="created | updated | deleted | restored | conflict | moved"
    )
    path = serializers.CharField(help_text="The note's path in this revision.")
    version = serializers.IntegerField(help_text="The entity's version after it.")
    base_version = serializers.IntegerField(allow_null=True, help_text="The writer's base.")
    machine = serializers.CharField(help_text="The writing machine, if named.")
    changed = serializers.ListField(child=serializers.CharField(), help_text="Fields changed.")
    title = serializers.CharField(help_text="Title in this revision.")
    status = serializers.CharField(help_text="Status in this revision.")
    content_hash = serializers.CharField(help_text="Hash of the content.")
    edges_added = serializers.JSONField(help_text="[[label, target], ...]")
    edges_removed = serializers.JSONField(help_text="[[label, target], ...]")
    created_at = serializers.DateTimeField(help_text="When.")


class ConflictRevisionOut(RevisionOut):
    front_matter = serializers.JSONField(help_text="The conflicting write's front matter.")
    body = serializers.CharField(help_text="The conflicting write's body.")


class UpsertOut(serializers.Serializer[Any]):
    outcome = serializers.CharField(
        help_text="created | updated | unchanged | conflict | restored | moved"
    )
    entity = EntityOut(help_text="The entity's current version.")
    revision = RevisionOut(allow_null=True, help_text="The revision written, if any.")
    conflict_revision = ConflictRevisionOut(
        allow_null=True, help_text="With a conflict: your write, kept."
    )


class RevisionListOut(serializers.Serializer[Any]):
    results = RevisionOut(many=True, help_text="Oldest first.")


class SearchHitOut(serializers.Serializer[Any]):
    rank = serializers.IntegerField(help_text="1-based.")
    score = serializers.FloatField(
        help_text="Reciprocal rank fusion of the legs' ranks (unweighted): ranks only, never "
        "raw lexical scores."
    )
    entity = EntityOut(help_text="The entity.")
    snippet = serializers.CharField(help_text="Part of the body.")


class SearchOut(serializers.Serializer[Any]):
    results = SearchHitOut(many=True, help_text="Best first.")


class NodeOut(serializers.Serializer[Any]):
    key = serializers.CharField(help_text="Key (or the unresolved target).")
    title = serializers.CharField(
        allow_null=True, source="node.title", default=None, help_text="Title."
    )
    type = serializers.CharField(
        allow_null=True, source="node.type", default=None, help_text="Type."
    )
    status = serializers.CharField(
        allow_null=True, source="node.status", default=None, help_text="Status."
    )
    resolved = serializers.SerializerMethodField(help_text="It exists.")
    depth = serializers.IntegerField(help_text="1 or 2.")
    label = serializers.CharField(help_text="Seen from `via`: blocked_by, blocks, ...")  # type: ignore[assignment]
    direction = serializers.CharField(help_text="out | in")
    via = serializers.CharField(help_text="The key it was reached from.")

    def get_resolved(self, step: Any) -> bool:
        return step.node is not None


class GraphEdgeOut(serializers.Serializer[Any]):
    source = serializers.CharField(help_text="From key.")  # type: ignore[assignment]
    target = serializers.CharField(help_text="To key (or target as written).")
    label = serializers.CharField(help_text="Label.")  # type: ignore[assignment]
    resolved = serializers.BooleanField(help_text="The target exists.")


class RelatedOut(serializers.Serializer[Any]):
    root = EntityOut(help_text="The entity asked about.")
    nodes = NodeOut(many=True, source="steps", help_text="Reached nodes.")
    edges = GraphEdgeOut(many=True, help_text="Edges walked.")


class BlockerOut(serializers.Serializer[Any]):
    key = serializers.CharField(help_text="Blocker key.")
    title = serializers.CharField(allow_null=True, help_text="Title.")
    status = serializers.CharField(allow_null=True, help_text="Status.")
    resolved = serializers.BooleanField(help_text="Exists.")
    last_changed_at = serializers.DateTimeField(help_text="Its last move.")
    idle_days = serializers.FloatField(help_text="Days since.")


class BlockedNodeOut(serializers.Serializer[Any]):
    key = serializers.CharField(help_text="Key.")
    title = serializers.CharField(help_text="Title.")
    status = serializers.CharField(help_text="Status.")
    path = serializers.CharField(help_text="Path.")


class BlockedOut(serializers.Serializer[Any]):
    entity = BlockedNodeOut(help_text="The blocked entity.")
    blockers = BlockerOut(many=True, help_text="Its stale blockers.")


class BlockersOut(serializers.Serializer[Any]):
    results = BlockedOut(many=True, help_text="Most idle first.")


class DiffOut(serializers.Serializer[Any]):
    since = serializers.DateTimeField(help_text="From.")
    until = serializers.DateTimeField(help_text="To.")
    created = serializers.ListField(child=serializers.CharField(), help_text="Keys.")
    deleted = serializers.ListField(child=serializers.CharField(), help_text="Keys.")
    restored = serializers.ListField(child=serializers.CharField(), help_text="Keys.")
    status_changes = serializers.JSONField(help_text="[{key, from, to}]")
    newly_blocked = serializers.ListField(child=serializers.CharField(), help_text="Keys.")
    unblocked = serializers.ListField(child=serializers.CharField(), help_text="Keys.")
    completed = serializers.ListField(child=serializers.CharField(), help_text="Keys.")
    edges_added = serializers.JSONField(help_text="[{from, label, to}]")
    edges_removed = serializers.JSONField(help_text="[{from, label, to}]")
    rewritten = serializers.JSONField(help_text="[{key, distance}]")


class HandoffOut(serializers.Serializer[Any]):
    project = serializers.CharField(help_text="The project's key.")
    project_name = serializers.CharField(help_text="Its name.")
    generated_at = serializers.DateTimeField(help_text="When.")
    hours = serializers.FloatField(help_text="Recent changes window.")
    token_budget = serializers.IntegerField(help_text="Budget.")
    tokens_used = serializers.IntegerField(help_text="Estimated tokens of the markdown.")
    truncated = serializers.BooleanField(help_text="Something did not fit.")
    sections = serializers.JSONField(
        help_text="The items that fit, per section (each with `ref`: the record it is about)."
    )
    omitted = serializers.JSONField(help_text="Per section, how many items did not fit.")
    markdown = serializers.CharField(help_text="The brief.")
    narration = serializers.CharField(allow_null=True, help_text="The model's narration.")


class CandidateOut(serializers.Serializer[Any]):
    key = serializers.CharField(help_text="Key.")
    path = serializers.CharField(help_text="Path.")
    title = serializers.CharField(help_text="Title.")
    version = serializers.IntegerField(help_text="Its version when planned.")
    reason = serializers.CharField(
        required=False,
        help_text="missing_and_seen (candidate); moved (move); not_seen | no_machine | "
        "ambiguous_move (kept).",
    )
    why = serializers.CharField(required=False, help_text="The reason, as a sentence.")


class MoveOut(CandidateOut):
    to = serializers.CharField(help_text="The new path.")


class MovedOut(serializers.Serializer[Any]):
    before = serializers.CharField(help_text="The key before (now an alias).")
    key = serializers.CharField(help_text="The key after.")


class ReconcileRunOut(serializers.Serializer[ReconcileRun]):
    plan_id = serializers.UUIDField(source="id", help_text="Apply with this id.")
    receipt_id = serializers.UUIDField(source="id", help_text="The same id: the receipt.")
    project = serializers.CharField(source="project.key", help_text="Project key.")
    status = serializers.CharField(help_text="planned | applied | superseded")
    manifest_hash = serializers.CharField(help_text="Send it back to apply.")
    roots = serializers.ListField(child=serializers.CharField(), help_text="Roots.")
    files = serializers.IntegerField(help_text="Files in the manifest.")
    entities_under_roots = serializers.IntegerField(help_text="Live entities under the roots.")
    machine = serializers.CharField(help_text="The manifest's machine (empty: none named).")
    candidates = CandidateOut(many=True, help_text="What applying tombstones, and why.")
    moves = MoveOut(many=True, help_text="What applying moves (same content or id elsewhere).")
    kept = CandidateOut(
        many=True, help_text="Entities whose file is missing that are NOT deleted, and why."
    )
    forced = serializers.BooleanField(help_text="The mass-deletion guard was lifted.")
    created_at = serializers.DateTimeField(help_text="Planned at.")
    expires_at = serializers.DateTimeField(help_text="Apply before.")
    applied_at = serializers.DateTimeField(allow_null=True, help_text="Applied at.")
    deleted = serializers.ListField(child=serializers.CharField(), help_text="Keys tombstoned.")
    moved = MovedOut(many=True, help_text="Keys moved ({before, key}).")
    restorable_until = serializers.SerializerMethodField(help_text="Tombstones restorable until.")

    def get_restorable_until(self, run: ReconcileRun) -> str | None:
        if run.applied_at is None:
            return None
        from datetime import timedelta

        return (run.applied_at + timedelta(days=settings.ATLAS_KNOWLEDGE_RESTORE_DAYS)).isoformat()
