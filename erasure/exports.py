"""erasure's sections of the user export (``tenants.exports``): the forget requests opened for
the user through the API, in full, and the erasure requests operators opened about them, by
status only (who asked and decided, and why, are the operators' records)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rest_framework import serializers

from erasure.api.serializers import ForgetRequestOut
from erasure.models import ForgetRequest
from tenants.exports import in_batches, register_export
from tenants.models import User


class ErasureRequestStatusOut(serializers.Serializer[Any]):
    id = serializers.IntegerField(help_text="The request's id.")
    scope = serializers.CharField(help_text="ids, query or user.")
    status = serializers.CharField(
        help_text="pending, approved, running, done, failed (retryable) or rejected."
    )
    created_at = serializers.DateTimeField(help_text="When it was opened.")
    finished_at = serializers.DateTimeField(allow_null=True, help_text="When the job finished.")


def _requests(user: User, by: str) -> Iterator[ForgetRequest]:
    rows = ForgetRequest.objects.filter(tenant_id=user.tenant_id, user=user, requested_by_type=by)
    return in_batches(rows.prefetch_related("progress"))


def register() -> None:
    register_export(
        "forget_requests",
        rows=lambda user: _requests(user, "token"),
        shape=ForgetRequestOut,
        help_text="Forget requests opened through the API (by the user's own token or a "
        "tenant token), in full, as `GET .../forget-requests` shows them.",
    )
    register_export(
        "erasure_requests",
        rows=lambda user: _requests(user, "operator"),
        shape=ErasureRequestStatusOut,
        help_text="Forget requests operators opened in the admin about the user: their "
        "status only (the operators' notes are the operators' records).",
    )
