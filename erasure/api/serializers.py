"""Request and response shapes of the forget-request endpoints (also the OpenAPI schema).

A response never echoes a query's text: it may be personal data, and the idempotency ledger
keeps responses for 24 h.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from atlas_platform.serializers import StrictCharField
from erasure.models import ForgetRequest
from erasure.services.requests import (
    MAX_IDS,
    MAX_QUERY_CHARS,
    MAX_REASON_CHARS,
    MAX_TICKET_CHARS,
)


class ForgetRequestIn(serializers.Serializer[Any]):
    scope = serializers.ChoiceField(
        choices=ForgetRequest.Scope.values,
        help_text="`ids`: the listed memories; `query`: every memory of the user whose text "
        "contains the query (case-insensitive phrase); `user`: all of the user's memories.",
    )
    memory_ids = serializers.ListField(
        child=StrictCharField(max_length=128),
        required=False,
        max_length=MAX_IDS,
        help_text="Scope `ids`: the memory ids to erase.",
    )
    query = StrictCharField(
        required=False,
        max_length=MAX_QUERY_CHARS,
        help_text="Scope `query`: the phrase. Kept only until the job resolves it into ids.",
    )
    include_supporting_episodes = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Also erase the episodes that supported the erased facts.",
    )
    delete_user_record = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Scope `user`: also delete the user record, its tokens and its cluster key.",
    )
    reason = StrictCharField(
        required=False,
        max_length=MAX_REASON_CHARS,
        help_text="Why the memories should be erased (shown to the approving operator and on "
        "the receipt).",
    )
    ticket = StrictCharField(
        required=False,
        max_length=MAX_TICKET_CHARS,
        help_text="Your ticket or case reference (on the receipt).",
    )


class ErasureProgressOut(serializers.Serializer[Any]):
    index = serializers.CharField(
        source="kind", help_text="episodic, semantic, procedural, archive."
    )
    deleted = serializers.IntegerField(help_text="Documents erased from this index so far.")
    done = serializers.BooleanField(help_text="Whether this index has been walked to the end.")
    remaining = serializers.IntegerField(
        allow_null=True, help_text="What the verification found left (0), once checked."
    )


class ForgetRequestOut(serializers.Serializer[Any]):
    id = serializers.IntegerField(help_text="The request's id.")
    scope = serializers.CharField(help_text="ids, query or user.")
    status = serializers.CharField(
        help_text="pending, approved, running, done, failed (retryable) or rejected."
    )
    memory_ids = serializers.ListField(
        child=serializers.CharField(),
        help_text="The targets: as listed, or the query's matches once resolved.",
    )
    include_supporting_episodes = serializers.BooleanField(help_text="As requested.")
    delete_user_record = serializers.BooleanField(help_text="As requested.")
    requested_because = serializers.CharField(
        source="justification", help_text="The reason given when it was opened."
    )
    ticket = serializers.CharField(help_text="The ticket reference given when it was opened.")
    reason = serializers.CharField(help_text="Why it was rejected or failed; empty otherwise.")
    retry_count = serializers.IntegerField(help_text="How often a failed job was retried.")
    created_at = serializers.DateTimeField(help_text="When it was opened.")
    decided_at = serializers.DateTimeField(allow_null=True, help_text="Approved or rejected.")
    started_at = serializers.DateTimeField(allow_null=True, help_text="When the job started.")
    finished_at = serializers.DateTimeField(allow_null=True, help_text="When the job finished.")
    verified = serializers.BooleanField(
        allow_null=True, help_text="True once a search found nothing matching left."
    )
    progress = ErasureProgressOut(many=True, source="progress.all", help_text="Per index.")
    receipt = serializers.JSONField(
        allow_null=True,
        help_text="Once done: per-index counts and erased ids (never text), when, by whom, "
        "and the verification result.",
    )


class ForgetRequestListIn(serializers.Serializer[Any]):
    after = serializers.IntegerField(
        required=False, min_value=1, help_text="Cursor from the previous page's `next`."
    )
    limit = serializers.IntegerField(
        required=False, default=50, min_value=1, max_value=200, help_text="Page size."
    )


class ForgetRequestPageOut(serializers.Serializer[Any]):
    results = ForgetRequestOut(many=True)
    next = serializers.IntegerField(
        allow_null=True, help_text="Cursor for `after` to get the next page; null at the end."
    )
