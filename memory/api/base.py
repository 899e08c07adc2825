"""The base of every memory endpoint: the request size limit, per-token rate limits, the
``Idempotency-Key`` ledger for writes, and (for ``/users/{user_id}/...``) the one place that
resolves the user a token may act for."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpResponseBase
from rest_framework import exceptions, status
from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from atlas_platform.exceptions import PermissionDenied, ValidationError
from memory.api.throttling import TokenRateThrottle
from memory.models import IdempotencyRecord
from memory.services.idempotency import (
    StoredResponse,
    idempotency_claim,
    idempotency_complete,
    idempotency_release,
    request_fingerprint,
)
from tenants.models import PlatformToken, User
from tenants.selectors import user_for_token

IDEMPOTENT_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "request_too_large"
    default_detail = "The request body is too large."


class LengthRequired(exceptions.APIException):
    status_code = status.HTTP_411_LENGTH_REQUIRED
    default_code = "length_required"
    default_detail = "Send the request body with a Content-Length header."


class _Replay(Exception):
    """Raised to answer a retried write with its stored response."""

    def __init__(self, stored: StoredResponse) -> None:
        self.response = Response(
            stored.body, status=stored.status_code, headers={"Idempotent-Replayed": "true"}
        )


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


def idempotency_key(request: Request) -> str | None:
    key = request.headers.get("Idempotency-Key")
    if key is None:
        return None
    if not 1 <= len(key) <= 255 or not (key.isascii() and key.isprintable()):
        raise ValidationError(
            "Idempotency-Key must be 1 to 255 printable ASCII characters.",
            code="bad_idempotency_key",
        )
    return key


class AtlasView(APIView):
    """Token-authenticated endpoint with size limit, rate limits and idempotent writes."""

    renderer_classes = [JSONRenderer]
    throttle_classes = [TokenRateThrottle]
    idempotent = True  # False for POSTs that only read (recall)
    _claim: IdempotencyRecord | None = None

    @property
    def token(self) -> PlatformToken:
        token = self.request.auth
        if not isinstance(token, PlatformToken):  # only token authentication is configured
            raise exceptions.NotAuthenticated()
        return token

    def rate_scope(self, request: Request) -> str:
        return "read" if request.method in SAFE_METHODS else "write"

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        check_body_size(request)
        super().initial(request, *args, **kwargs)
        self.resolve(**kwargs)
        self._claim_key(request)

    def resolve(self, **kwargs: Any) -> None:
        """Hook: load what the path names (and refuse what the token may not reach)."""

    def _claim_key(self, request: Request) -> None:
        key = idempotency_key(request)
        if key is None or not self.idempotent or request.method not in IDEMPOTENT_METHODS:
            return
        outcome = idempotency_claim(
            token=self.token,
            key=key,
            request_line=f"{request.method} {request.path}",
            request_hash=request_fingerprint(request.body),
        )
        if isinstance(outcome, StoredResponse):
            raise _Replay(outcome)
        self._claim = outcome

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, _Replay):
            return exc.response
        return super().handle_exception(exc)

    def finalize_response(
        self, request: Request, response: Response, *args: Any, **kwargs: Any
    ) -> Response:
        response = super().finalize_response(request, response, *args, **kwargs)
        claim, self._claim = self._claim, None
        if claim is not None and response.status_code < 300:
            idempotency_complete(record=claim, status_code=response.status_code, body=response.data)
        elif claim is not None:  # a failed write wrote nothing: let a retry run again
            idempotency_release(record=claim)
        return response

    def dispatch(self, request: Any, *args: Any, **kwargs: Any) -> HttpResponseBase:
        try:
            return super().dispatch(request, *args, **kwargs)
        finally:
            if self._claim is not None:  # an uncaught error skipped finalize_response
                idempotency_release(record=self._claim)
                self._claim = None


class UserView(AtlasView):
    """``/users/{user_id}/...``: ``self.subject`` is the user the token may act for, resolved
    before any handler runs (404 for another tenant's or another user's id)."""

    subject: User

    def resolve(self, **kwargs: Any) -> None:
        self.subject = user_for_token(token=self.token, external_id=kwargs["user_id"])


class CatalogAccess(BasePermission):
    """Tenant-wide tokens with catalog rights only."""

    def has_permission(self, request: Request, view: APIView) -> bool:
        token = request.auth
        if not isinstance(token, PlatformToken):
            return False
        if token.user_id is not None or not token.allow_catalog:
            raise PermissionDenied(
                "The catalog needs a tenant-wide token issued with catalog rights.",
                code="catalog_not_allowed",
            )
        return True
