"""The base of every API endpoint: JSON only, the request size limit, per-token rate limits, and
one hook that loads what the path names before any handler runs. Apps add what they own on top
(``tenants.api.base``: the token and the user it acts for; ``memory.api.base``: the
``Idempotency-Key`` ledger)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework import exceptions, serializers, status
from rest_framework.permissions import SAFE_METHODS
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.views import APIView

from atlas_platform.throttling import TokenRateThrottle


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "request_too_large"
    default_detail = "The request body is too large."


class LengthRequired(exceptions.APIException):
    status_code = status.HTTP_411_LENGTH_REQUIRED
    default_code = "length_required"
    default_detail = "Send the request body with a Content-Length header."


def check_body_size(request: Request) -> None:
    """Refuse a body over ``ATLAS_MAX_REQUEST_BYTES`` before anything reads it, and a chunked
    body (no length): Django reads a request's body up to its Content-Length only, so it would
    otherwise be taken for an empty one and refused for fields it does carry."""
    if "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower():
        raise LengthRequired(
            "Chunked request bodies are not accepted: send the body with a Content-Length header."
        )
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    limit = int(settings.ATLAS_MAX_REQUEST_BYTES)
    if length > limit:
        raise PayloadTooLarge(f"The request body is {length} bytes; the limit is {limit}.")


def parsed(serializer_class: type[serializers.Serializer[Any]], data: Any) -> dict[str, Any]:
    """Validated input (a 400 in the shared shape otherwise)."""
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


class ApiView(APIView):
    """JSON endpoint with the size limit and per-token rate limits (scope from ``rate_scope``)."""

    renderer_classes = [JSONRenderer]
    throttle_classes = [TokenRateThrottle]

    def rate_scope(self, request: Request) -> str:
        return "read" if request.method in SAFE_METHODS else "write"

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        check_body_size(request)
        super().initial(request, *args, **kwargs)
        self.resolve(**kwargs)

    def resolve(self, **kwargs: Any) -> None:
        """Hook: load what the path names (and refuse what the token may not reach)."""
