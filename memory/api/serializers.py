"""Request and response shapes of the memory REST API (they are also the OpenAPI schema).

Input serializers check types and ranges; the services check everything else (text length,
supersession rules) and answer with the shared error shape.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from atlas_platform.serializers import StrictCharField
from atlas_platform.views import unknown_fields
from memory.services.recall import RecallHit
from memory.services.writes import CONTRADICTIONS, FACT_TYPES, WRITABLE_TYPES
from memory.shapes import memory_json, recall_hit_json
from memory.types import PERSONAL_TYPES, MemoryDoc

TEXT_HELP = "Verbatim text (at most ATLAS_MAX_MEMORY_CHARS characters, 8000 by default)."


def _text(help_text: str = TEXT_HELP) -> serializers.CharField:
    return StrictCharField(trim_whitespace=False, help_text=help_text)


def _optional_str(help_text: str, max_length: int = 200) -> serializers.CharField:
    return StrictCharField(
        required=False, allow_null=True, max_length=max_length, help_text=help_text
    )


def _tags() -> serializers.ListField:
    return serializers.ListField(
        child=StrictCharField(max_length=100),
        required=False,
        max_length=50,
        help_text="Free labels (at most 50).",
    )


def _metadata() -> serializers.DictField:
    return serializers.DictField(
        required=False, help_text="Any JSON object; stored, returned, never searched."
    )


class StepIn(serializers.Serializer[Any]):
    instruction = StrictCharField(max_length=2000, help_text="What to do in this step.")
    order = serializers.IntegerField(
        required=False, min_value=1, max_value=10_000, help_text="Position (default: list order)."
    )
    tool = _optional_str("Tool this step uses, if any.")


STEP_SCHEMA = {
    "oneOf": [
        {"type": "string", "minLength": 1, "maxLength": 2000},
        {
            "type": "object",
            "properties": {
                "instruction": {"type": "string", "minLength": 1, "maxLength": 2000},
                "order": {"type": "integer", "minimum": 1, "maximum": 10_000},
                "tool": {"type": "string", "nullable": True, "maxLength": 200},
            },
            "required": ["instruction"],
        },
    ],
    "description": "A step: its instruction as a string, or {instruction, order?, tool?}.",
}


@extend_schema_field(STEP_SCHEMA)
class StepField(serializers.Field[dict[str, Any], Any, Any, Any]):
    """A playbook step given as a plain instruction or as an object."""

    def to_internal_value(self, data: Any) -> dict[str, Any]:
        if isinstance(data, str):
            data = {"instruction": data}
        step = StepIn(data=data)
        unknown = unknown_fields(step, data)
        if unknown:
            accepted = ", ".join(sorted(step.fields))
            raise serializers.ValidationError(
                f"Unknown step field: {', '.join(unknown)}. A step is a string (its "
                f"instruction) or an object with: {accepted}."
            )
        step.is_valid(raise_exception=True)
        return dict(step.validated_data)

    def to_representation(self, value: dict[str, Any]) -> dict[str, Any]:
        return value


def _steps(help_text: str) -> serializers.ListField:
    return serializers.ListField(
        child=StepField(), required=False, max_length=100, help_text=help_text
    )


# --- memories out ---------------------------------------------------------------------------
class MemoryOut(serializers.Serializer[MemoryDoc]):
    """One memory as the API shows it (never its embedding or internal tenant / user ids): the
    schema of ``memory.shapes.memory_json``, the shape the MCP tools answer with too."""

    id = serializers.CharField(help_text="Opaque id.")
    memory_type = serializers.CharField(help_text="episodic | semantic | procedural | catalog.")
    text = serializers.CharField()
    created_at = serializers.DateTimeField(help_text="When Atlas stored it.")
    timestamp = serializers.DateTimeField(help_text="When the remembered thing happened.")
    confidence = serializers.FloatField()
    # "source" shadows Field.source in the stubs only; DRF takes declared fields as fields.
    source = serializers.CharField(help_text="turn | agent | consolidation | operator.")  # type: ignore[assignment]
    tags = serializers.ListField(child=serializers.CharField())
    metadata = serializers.DictField()
    project = serializers.CharField(
        allow_null=True, help_text="The project (key) it was written from, or null."
    )
    session_id = serializers.CharField(allow_null=True)
    session_inferred = serializers.BooleanField(
        help_text="True when Atlas chose the session (the turn came without a session_id: it "
        "joined the current one, or opened a new one after ATLAS_SESSION_GAP_S of quiet)."
    )
    agent = serializers.CharField(allow_null=True)
    fact_type = serializers.CharField(allow_null=True)
    supersedes = serializers.ListField(
        child=serializers.CharField(), help_text="Ids of the facts this one replaced."
    )
    superseded_by = serializers.CharField(
        allow_null=True, help_text="Id of the fact that replaced this one (null: current)."
    )
    superseded_at = serializers.DateTimeField(allow_null=True)
    superseded = serializers.BooleanField(help_text="True once a newer fact replaced this one.")
    contradiction = serializers.CharField(allow_null=True, help_text="natural | harsh | null.")
    supporting_episode_ids = serializers.ListField(child=serializers.CharField())
    valid_from = serializers.DateTimeField(allow_null=True)
    valid_to = serializers.DateTimeField(allow_null=True)
    last_used_at = serializers.DateTimeField(allow_null=True)
    use_count = serializers.IntegerField(help_text="How often recall returned this fact.")
    name = serializers.CharField(allow_null=True)
    description = serializers.CharField(allow_null=True)
    trigger = serializers.CharField(allow_null=True)
    steps = serializers.ListField(child=serializers.DictField())
    success_count = serializers.IntegerField()
    failure_count = serializers.IntegerField()
    last_success_at = serializers.DateTimeField(allow_null=True)
    version = serializers.IntegerField(help_text="Playbook version (refined steps add one).")

    def to_representation(self, instance: MemoryDoc) -> dict[str, Any]:
        """The declared fields (they define the schema), built directly: DRF's per-field
        machinery cost ~1.5 ms a memory, the largest share of a recall request's own CPU."""
        return memory_json(instance)


class RecallHitOut(MemoryOut):
    """A memory plus where recall ranked it."""

    score = serializers.FloatField(
        help_text="Sum of 1 / (5 + rank) over leg_ranks: made of ranks only, never of raw "
        "lexical scores. Order by rank (recall may weigh legs or rerank)."
    )
    rank = serializers.IntegerField(help_text="1-based position in the answer.")
    leg_ranks = serializers.DictField(
        child=serializers.IntegerField(), help_text="Rank within each leg that found it."
    )

    def to_representation(self, instance: RecallHit) -> dict[str, Any]:  # type: ignore[override]
        return recall_hit_json(instance)


class RecallOut(serializers.Serializer[Any]):
    hits = RecallHitOut(many=True)
    legs = serializers.ListField(child=serializers.CharField(), help_text="Legs that ran.")
    reranker = serializers.CharField(allow_null=True, help_text="Reranker used, if any.")
    reranked = serializers.BooleanField(help_text="False: the fused order was kept.")
    timings_ms = serializers.DictField(child=serializers.FloatField())
    took_ms = serializers.FloatField()


class TurnOut(RecallOut):
    episode = MemoryOut(help_text="The episode the turn stored.")


class HistoryOut(serializers.Serializer[Any]):
    chain = MemoryOut(many=True, help_text="The supersession chain, oldest first.")


class CatalogDocumentOut(serializers.Serializer[Any]):
    """A catalog document as written."""

    id = serializers.CharField()
    text = serializers.CharField()
    name = serializers.CharField(allow_null=True)
    tags = serializers.ListField(child=serializers.CharField())
    metadata = serializers.DictField()


class CatalogPageOut(serializers.Serializer[Any]):
    results = MemoryOut(many=True)
    next = serializers.CharField(
        allow_null=True, help_text="Cursor for `after` to get the next page; null at the end."
    )


class MemoryPageOut(serializers.Serializer[Any]):
    results = MemoryOut(many=True)
    next = serializers.CharField(
        allow_null=True, help_text="Cursor for `after` to get the next page; null at the end."
    )


# --- requests -------------------------------------------------------------------------------
class TurnIn(serializers.Serializer[Any]):
    text = _text("The user's message, verbatim: stored as an episode and recalled on.")
    session_id = _optional_str("Conversation id, kept on the episode.")
    agent = _optional_str("Which agent recorded the turn.")
    timestamp = serializers.DateTimeField(
        required=False, allow_null=True, help_text="When it was said (default: now)."
    )
    k = serializers.IntegerField(
        required=False, default=5, min_value=1, max_value=50, help_text="Hits to recall."
    )


class RecallIn(serializers.Serializer[Any]):
    query = _text("What to recall, in the user's words.")
    k = serializers.IntegerField(
        required=False, default=10, min_value=1, max_value=50, help_text="Hits to return."
    )
    memory_types = serializers.ListField(
        child=serializers.ChoiceField(choices=PERSONAL_TYPES),
        required=False,
        allow_null=True,
        allow_empty=False,
        help_text="Personal types to search (default: all three).",
    )
    include_catalog = serializers.BooleanField(
        required=False, default=True, help_text="Also search the tenant catalog."
    )
    include_superseded = serializers.BooleanField(
        required=False, default=False, help_text="Also return superseded (archived) facts."
    )
    since = serializers.DateTimeField(
        required=False, allow_null=True, help_text="Only memories at or after this time."
    )
    until = serializers.DateTimeField(
        required=False, allow_null=True, help_text="Only memories at or before this time."
    )
    mode = serializers.ChoiceField(
        choices=("hybrid", "keyword", "semantic"),
        required=False,
        default="hybrid",
        help_text="hybrid (lexical + dense, the default), keyword (lexical only), semantic "
        "(dense only).",
    )
    project = serializers.RegexField(
        r"^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,199}$",
        required=False,
        allow_null=True,
        help_text="Only memories written from this project (its key); the catalog is not affected.",
    )
    include_unscoped = serializers.BooleanField(
        required=False,
        default=False,
        help_text="With project: also memories written from no project.",
    )


class MemoryIn(serializers.Serializer[Any]):
    text = _text()
    memory_type = serializers.ChoiceField(choices=WRITABLE_TYPES, help_text="What to write.")
    confidence = serializers.FloatField(
        required=False, default=1.0, min_value=0.0, max_value=1.0, help_text="0..1."
    )
    fact_type = serializers.ChoiceField(
        choices=FACT_TYPES, required=False, allow_null=True, help_text="Semantic only."
    )
    supersedes = serializers.ListField(
        child=StrictCharField(max_length=200),
        required=False,
        max_length=50,
        help_text="Ids of the user's current facts this one replaces (semantic only).",
    )
    contradiction = serializers.ChoiceField(
        choices=CONTRADICTIONS,
        required=False,
        allow_null=True,
        help_text="With supersedes: harsh lowers the new fact's confidence.",
    )
    valid_from = serializers.DateTimeField(required=False, allow_null=True)
    valid_to = serializers.DateTimeField(required=False, allow_null=True)
    name = _optional_str("Procedural: the playbook's name.")
    description = _optional_str("Procedural: what it is for.", max_length=2000)
    trigger = _optional_str("Procedural: when to use it.", max_length=2000)
    steps = _steps("Procedural: the steps, in order.")
    tags = _tags()
    metadata = _metadata()


class OutcomeIn(serializers.Serializer[Any]):
    success = serializers.BooleanField(help_text="Did following the playbook work?")
    refined_steps = serializers.ListField(
        child=StepField(),
        required=False,
        allow_empty=False,
        max_length=100,
        help_text="Better steps learned this time: replace the steps (version + 1).",
    )


class CatalogListIn(serializers.Serializer[Any]):
    after = serializers.CharField(
        required=False, max_length=500, help_text="Cursor from the previous page's `next`."
    )
    limit = serializers.IntegerField(
        required=False, default=50, min_value=1, max_value=200, help_text="Page size."
    )


class CatalogDocumentIn(serializers.Serializer[Any]):
    text = _text()
    name = _optional_str("Title of the document.")
    tags = _tags()
    metadata = _metadata()


class MemoryListIn(serializers.Serializer[Any]):
    memory_type = serializers.ListField(
        child=serializers.ChoiceField(choices=PERSONAL_TYPES),
        required=False,
        allow_empty=False,
        help_text="Only these types (repeat the parameter; default: all three personal types).",
    )
    superseded = serializers.ChoiceField(
        choices=["any", "current", "only"],
        required=False,
        default="any",
        help_text="current: leave superseded facts out; only: nothing but superseded facts.",
    )
    since = serializers.DateTimeField(
        required=False, help_text="Only memories stored at or after this time."
    )
    until = serializers.DateTimeField(
        required=False, help_text="Only memories stored at or before this time."
    )
    after = serializers.CharField(
        required=False, max_length=500, help_text="Cursor from the previous page's `next`."
    )
    limit = serializers.IntegerField(
        required=False, default=50, min_value=1, max_value=100, help_text="Page size."
    )
