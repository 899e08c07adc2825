"""consolidation's sections of the user export (``tenants.exports``): the runs over the user's
episodes (what each read, wrote and cost; never text: the memories it wrote are in
``memories``), the consolidation state (watermark, episodes pending) and the playbooks a turn's
recall suggested to a session."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from consolidation.models import ConsolidationRun, ConsolidationState, PlaybookSuggestion
from tenants.exports import in_batches, register_export


class RunExportOut(serializers.Serializer[ConsolidationRun]):
    id = serializers.IntegerField(help_text="The run's id.")
    trigger = serializers.CharField(help_text="episodes | daily | on_demand.")
    status = serializers.CharField(help_text="queued | running | done | failed.")
    window_episode_ids = serializers.ListField(
        child=serializers.CharField(), help_text="The episodes it read, oldest first."
    )
    episodes_in = serializers.IntegerField(help_text="Episodes read.")
    facts_written = serializers.IntegerField(help_text="Facts written.")
    supersessions = serializers.IntegerField(help_text="Facts it superseded.")
    procedures_written = serializers.IntegerField(help_text="Playbooks written.")
    procedures_updated = serializers.IntegerField(help_text="Playbooks updated.")
    prompt_tokens = serializers.IntegerField(help_text="Tokens sent to the chat model.")
    completion_tokens = serializers.IntegerField(help_text="Tokens it answered with.")
    model = serializers.CharField(help_text="The chat model.")
    created_at = serializers.DateTimeField(help_text="Queued.")
    started_at = serializers.DateTimeField(allow_null=True, help_text="Started.")
    finished_at = serializers.DateTimeField(allow_null=True, help_text="Finished.")


class StateExportOut(serializers.Serializer[ConsolidationState]):
    watermark_created_at = serializers.DateTimeField(
        allow_null=True, help_text="The newest episode consolidated (its time)."
    )
    watermark_episode_id = serializers.CharField(help_text="... and its id.")
    pending_episodes = serializers.IntegerField(help_text="Episodes recorded since.")
    updated_at = serializers.DateTimeField(help_text="Last change.")


class SuggestionExportOut(serializers.Serializer[PlaybookSuggestion]):
    episode_id = serializers.CharField(help_text="The turn's episode.")
    session_id = serializers.CharField(help_text="Its session.")
    procedure_ids = serializers.ListField(
        child=serializers.CharField(), help_text="The playbooks its recall returned."
    )
    created_at = serializers.DateTimeField(help_text="When.")


SECTIONS: tuple[tuple[str, Any, type[serializers.Serializer[Any]], str], ...] = (
    (
        "consolidation_runs",
        lambda user: in_batches(ConsolidationRun.objects.filter(user=user)),
        RunExportOut,
        "Consolidations of the user's episodes into facts and playbooks (counts, no text).",
    ),
    (
        "consolidation_state",
        lambda user: in_batches(ConsolidationState.objects.filter(user=user)),
        StateExportOut,
        "Where consolidation stands for the user (at most one row).",
    ),
    (
        "playbook_suggestions",
        lambda user: in_batches(PlaybookSuggestion.objects.filter(user=user)),
        SuggestionExportOut,
        "Playbooks a turn's recall suggested, kept for the next consolidation.",
    ),
)


def register() -> None:
    for name, rows, shape, help_text in SECTIONS:
        register_export(name, rows=rows, shape=shape, help_text=help_text)
