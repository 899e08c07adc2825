"""The ``Idempotency-Key`` of REST writes on the exactly-once ledger (``atlas_platform.ledger``):
the header's rules, the claim (per token, 24 h), its refusals, and the hook a write runs under
while its claim is held.

The views' side (claim in ``initial``, settle in ``finalize_response``) is
``atlas_platform.views.IdempotentWrites``. The ids a claimed write makes are the memory app's
(``memory.services.intents``: ids derived from the claim's seed, so a retry makes the same ones);
it registers that context with ``register_write_identity`` from its ``ready()``, so the platform
imports no app.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from rest_framework.request import Request

from atlas_platform.exceptions import AtlasError, ValidationError
from atlas_platform.ledger import KeyInProgress, KeyReused, Replay, ledger_claim
from atlas_platform.models import LedgerEntry

IDEMPOTENT_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
IDEMPOTENCY_TTL = timedelta(hours=24)  # how long a token's key replays its first response


class IdempotencyKeyReused(AtlasError):
    """An ``Idempotency-Key`` came back with a different request than the one it first named."""

    status_code = 422
    code = "idempotency_key_reused"


class IdempotencyInProgress(AtlasError):
    """The first request with this ``Idempotency-Key`` has not finished yet."""

    status_code = 409
    code = "idempotency_in_progress"


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


def idempotency_claim(*, token: Any, key: str, request: Request) -> LedgerEntry | Replay:
    """The key's claim in the exactly-once ledger, scoped to the token (a platform token:
    ``pk``, ``tenant_id``, ``user_id``), or its stored response; the ledger's refusals as this
    header's errors (422 another request, 409 the first one still runs)."""
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


# (begin(seed) -> handle, end(handle)): the context a claimed write's handler runs in.
_identity: list[tuple[Callable[[str], Any], Callable[[Any], None]]] = []


def register_write_identity(begin: Callable[[str], Any], end: Callable[[Any], None]) -> None:
    """Install the context a claimed write runs in (once per process; a second registration
    replaces the first): ``begin(seed)`` as the handler starts, ``end(handle)`` once it is
    settled."""
    _identity[:] = [(begin, end)]


def write_identity_begin(seed: str) -> Any:
    return _identity[0][0](seed) if _identity else None


def write_identity_end(handle: Any) -> None:
    if _identity:
        _identity[0][1](handle)
