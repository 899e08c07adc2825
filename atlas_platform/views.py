"""The bases of every API endpoint: JSON only, the request size limit, per-token rate limits,
one hook that loads what the path names before any handler runs (``ApiView``), the calling
token (``TokenApiView``) and the user it acts for (``UserApiView``: resolved by the caller rules
of ``atlas_platform.callers``, the same ones the MCP host uses), and the ``Idempotency-Key``
ledger for writes (``IdempotentWrites``: ``AtlasView`` and ``UserView``, the bases every app's
endpoints subclass; ``atlas_platform.idempotency``)."""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.db import DatabaseError
from django.http import HttpResponseBase, QueryDict
from rest_framework import exceptions, serializers, status
from rest_framework.permissions import SAFE_METHODS
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from atlas_platform.callers import callers
from atlas_platform.exceptions import ValidationError
from atlas_platform.idempotency import (
    IDEMPOTENT_METHODS,
    idempotency_claim,
    idempotency_key,
    write_identity_begin,
    write_identity_end,
)
from atlas_platform.ledger import Replay, ledger_complete, ledger_release, ledger_unknown
from atlas_platform.models import LedgerEntry
from atlas_platform.renderers import JSONRenderer
from atlas_platform.throttling import TokenRateThrottle

logger = logging.getLogger(__name__)


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
    """Validated input (a 400 in the shared shape otherwise). A field the serializer does not
    declare is refused (``unknown_field``), at any depth: ``top_k`` for ``k`` must not answer
    200 with the default."""
    serializer = serializer_class(data=data)
    unknown = unknown_fields(serializer, data)
    if unknown:
        raise ValidationError(
            f"Unknown field{'s' if len(unknown) > 1 else ''}: {', '.join(unknown)}. "
            + " ".join(_accepted(serializer, unknown)),
            code="unknown_field",
            # the shape of DRF's field errors: {field: [messages]}
            **{name: ["Unknown field."] for name in unknown},
        )
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def _accepted(serializer: serializers.Serializer[Any], unknown: list[str]) -> list[str]:
    """Per level an unknown field sits at, the fields that level takes: "This request takes:
    ..." at the top, "steps[0] takes: ..." inside a nested object."""
    sentences: dict[str, str] = {}
    for path in unknown:
        parent = path.rpartition(".")[0]
        fields: Any = serializer.fields
        for part in parent.split(".") if parent else []:
            field = fields.get(part.partition("[")[0])
            nested = field if isinstance(field, serializers.Serializer) else None
            nested = nested or getattr(field, "child", None)
            fields = nested.fields if isinstance(nested, serializers.Serializer) else {}
        where = f"{parent} takes" if parent else "This request takes"
        sentences.setdefault(parent, f"{where}: {', '.join(sorted(fields)) or 'nothing'}.")
    return list(sentences.values())


def unknown_fields(serializer: serializers.Serializer[Any], data: Any, at: str = "") -> list[str]:
    """The keys of ``data`` (a JSON object or a query string) that ``serializer`` does not
    declare, with their path (``steps[0].tool_name``); nested serializers are walked too."""
    if not isinstance(data, Mapping):
        return []
    fields = serializer.fields
    found = [f"{at}{key}" for key in data if key not in fields]
    for name, field in fields.items():
        if isinstance(data, QueryDict) or name not in data:
            continue
        value, child = data[name], getattr(field, "child", None)
        if isinstance(field, serializers.Serializer):
            found += unknown_fields(field, value, f"{at}{name}.")
        elif isinstance(child, serializers.Serializer) and isinstance(value, list):
            for n, item in enumerate(value):
                found += unknown_fields(child, item, f"{at}{name}[{n}].")
    return found


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


class TokenApiView(ApiView):
    """An endpoint called with a platform token (``self.token``)."""

    @property
    def token(self) -> Any:
        token = self.request.auth
        if token is None:  # only token authentication is configured
            raise exceptions.NotAuthenticated()
        return token


class UserApiView(TokenApiView):
    """``/users/{user_id}/...``: ``self.subject`` is the user the token may act for, resolved
    before any handler runs (404 for another tenant's or another user's id)."""

    subject: Any
    # True on the endpoint that starts a conversation (a turn): an unknown user is provisioned
    # first where the tenant turned on auto-provisioning.
    provisions_unknown_user = False

    def resolve(self, **kwargs: Any) -> None:
        self.subject = callers().subject(
            token=self.token,
            external_id=kwargs["user_id"],
            provisions=self.provisions_unknown_user,
        )


class _Replay(Exception):
    """Raised to answer a retried write with its stored response."""

    def __init__(self, stored: Replay) -> None:
        self.response = Response(
            stored.body, status=stored.status_code, headers={"Idempotent-Replayed": "true"}
        )


class IdempotentWrites(TokenApiView):
    """Writes with an ``Idempotency-Key`` are claimed after the path resolved and before the
    handler runs, and the handler runs with memory ids derived from the claim's seed
    (``atlas_platform.idempotency.register_write_identity``). The response is stored on success
    (a retry gets it back); a 4xx releases the key; a 5xx ends the claim's lease, so the retry
    takes it over at once, makes the same ids and finds what the failed attempt may have
    stored: it answers the first write instead of making a second. A claim whose process died
    is taken over once its lease (``ATLAS_WRITE_LEASE_S``) ends."""

    idempotent = True  # False for POSTs that only read (recall)
    _claim: LedgerEntry | None = None
    _replaying: contextvars.Token[Any] | None = None

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        self._claim_key(request)

    def _claim_key(self, request: Request) -> None:
        key = idempotency_key(request)
        if key is None or not self.idempotent or request.method not in IDEMPOTENT_METHODS:
            return
        outcome = idempotency_claim(token=self.token, key=key, request=request)
        if isinstance(outcome, Replay):
            raise _Replay(outcome)
        self._claim = outcome
        self._replaying = write_identity_begin(outcome.seed)

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, _Replay):
            return exc.response
        return super().handle_exception(exc)

    def finalize_response(
        self, request: Request, response: Response, *args: Any, **kwargs: Any
    ) -> Response:
        response = super().finalize_response(request, response, *args, **kwargs)
        self._settle(response.status_code, getattr(response, "data", None))
        return response

    def _settle(self, status_code: int, body: Any) -> None:
        claim, self._claim = self._claim, None
        if self._replaying is not None:
            write_identity_end(self._replaying)
            self._replaying = None
        if claim is None:
            return
        try:
            if status_code < 300:
                ledger_complete(entry=claim, status_code=status_code, body=body)
            elif status_code < 500:  # refused: nothing written, the key is free again
                ledger_release(entry=claim)
            else:  # unknown outcome: the retry runs under the same ids and finds it
                ledger_unknown(entry=claim)
        except DatabaseError:  # the claim's lease ends by itself; a retry takes it over
            logger.warning("idempotency claim left to its lease", extra={"key": claim.key})

    def dispatch(self, request: Any, *args: Any, **kwargs: Any) -> HttpResponseBase:
        try:
            return super().dispatch(request, *args, **kwargs)
        finally:
            if self._claim is not None or self._replaying is not None:
                self._settle(500, None)  # an uncaught error skipped finalize_response


class AtlasView(IdempotentWrites):
    """A token-authenticated endpoint: size limit, rate limits, idempotent writes."""


class UserView(IdempotentWrites, UserApiView):
    """``/users/{user_id}/...`` (``self.subject``, resolved before any handler) with idempotent
    writes."""
