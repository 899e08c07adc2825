"""OpenAPI pieces every API app shares: the error body and documented error responses."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import serializers


class ErrorDetailOut(serializers.Serializer[Any]):
    code = serializers.CharField(help_text="Machine code, e.g. `invalid`, `user_not_found`.")
    message = serializers.CharField(help_text="What went wrong, for a human.")
    details = serializers.JSONField(required=False, help_text="Per-field problems, if any.")
    request_id = serializers.CharField(allow_null=True, help_text="Quote it in bug reports.")


class ErrorOut(serializers.Serializer[Any]):
    """Every error: ``{"error": {code, message, details?, request_id}}``."""

    error = ErrorDetailOut()


ERROR_TEXT = {
    400: "Invalid input (details per field) or a rule of the memory service.",
    401: "No token, or a malformed, revoked or expired one.",
    403: "The token may not do this (catalog endpoints need a tenant token with catalog rights).",
    404: "No such user, memory or path for this token (other tenants' ids look the same).",
    409: "A conflicting write, or the first request with this Idempotency-Key still runs.",
    413: "The request body is larger than ATLAS_MAX_REQUEST_BYTES.",
    415: "The body is not JSON (send Content-Type: application/json).",
    422: "This Idempotency-Key was used for a different request.",
    429: "Rate limit for this token reached; see Retry-After.",
    503: "The memory store is unavailable; nothing was written.",
}


def errors(*codes: int) -> dict[int, OpenApiResponse]:
    """Documented error responses (all in the shared shape) for ``extend_schema``."""
    return {code: OpenApiResponse(ErrorOut, description=ERROR_TEXT[code]) for code in codes}


READ_ERRORS = (400, 401, 404, 413, 429, 503)
BODY_READ_ERRORS = (*READ_ERRORS, 415)  # POST recall
WRITE_ERRORS = (*READ_ERRORS, 409, 415, 422)


IDEMPOTENCY_KEY = OpenApiParameter(
    "Idempotency-Key",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description=(
        "Any unique string (at most 255 printable ASCII characters). A retry with the same key "
        "and body within 24 h returns the first response (header `Idempotent-Replayed: true`) "
        "and writes nothing."
    ),
)
USER_ID = OpenApiParameter(
    "user_id",
    str,
    OpenApiParameter.PATH,
    description="The user's external id within the token's tenant.",
)
