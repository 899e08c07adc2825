"""The bases of memory's endpoints (and of other apps' write endpoints): the platform's API
bases (``atlas_platform.views``) with the ``Idempotency-Key`` ledger for
writes."""

from __future__ import annotations

import contextvars
import hashlib
import logging
import uuid
from datetime import timedelta
from typing import Any

from django.db import DatabaseError
from django.http import HttpResponseBase
from rest_framework.request import Request
from rest_framework.response import Response

from atlas_platform.exceptions import ValidationError
from atlas_platform.ledger import (
    KeyInProgress,
    KeyReused,
    Replay,
    ledger_claim,
    ledger_complete,
    ledger_release,
    ledger_unknown,
)
from atlas_platform.models import LedgerEntry
from atlas_platform.views import TokenApiView, UserApiView
from memory.errors import IdempotencyInProgress, IdempotencyKeyReused
from memory.services.intents import replay_begin, replay_end
from tenants.models import PlatformToken

logger = logging.getLogger(__name__)
IDEMPOTENT_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
IDEMPOTENCY_TTL = timedelta(hours=24)  # how long a token's key replays its first response


class _Replay(Exception):
    """Raised to answer a retried write with its stored response."""

    def __init__(self, stored: Replay) -> None:
        self.response = Response(
            stored.body, status=stored.status_code, headers={"Idempotent-Replayed": "true"}
        )


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


def idempotency_claim(*, token: PlatformToken, key: str, request: Request) -> LedgerEntry | Replay:
    """The key's claim in the exactly-once ledger (``atlas_platform.ledger``), scoped to the
    token, or its stored response; the ledger's refusals as this header's errors (422 another
    request, 409 the first one still runs)."""
    try:
        return ledger_claim(
            scope=f"token:{token.pk}",
            key=key,
            request=f"{request.method} {request.path}",
            request_hash=hashlib.sha256(request.body).hexdigest(),
            # A new claim's own seed: a key used again after it expired is a new write.
            seed=f"idem:{token.tenant_id}:{token.pk}:{uuid.uuid4().hex}",
            ttl=IDEMPOTENCY_TTL,
            tenant_id=token.tenant_id,
            user_id=token.user_id,
        )
    except KeyReused as exc:
        raise IdempotencyKeyReused(
            "This Idempotency-Key was already used for a different request.",
            first_request=exc.first_request,
        ) from None
    except KeyInProgress as exc:
        raise IdempotencyInProgress(
            "The first request with this Idempotency-Key has not finished; retry shortly.",
            retry_after=exc.retry_after,
        ) from None


class IdempotentWrites(TokenApiView):
    """Writes with an ``Idempotency-Key`` are claimed after the path resolved and before the
    handler runs, and the handler runs with memory ids derived from the claim's seed
    (``intents.replayable``). The response is stored on success (a retry gets it back); a 4xx
    releases the key; a 5xx ends the claim's lease, so the retry takes it over at once, makes
    the same ids and finds what the failed attempt may have stored: it answers the first
    write instead of making a second. A claim whose process died is taken over once its lease
    (``ATLAS_WRITE_LEASE_S``) ends."""

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
        self._replaying = replay_begin(outcome.seed)

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
            replay_end(self._replaying)
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
