"""The REST API's idempotency ledger: claim a key, then record or release the outcome.

A retry with the same token, key, request line and body gets the stored response back and
writes nothing; the same key with another request is refused (422); a duplicate that arrives
while the first is still running is refused (409, with how long to wait) and may retry. The
unique constraint on (token, key) decides races.

A claim holds for ``ATLAS_WRITE_LEASE_S``. The write runs inside ``intents.replayable`` with
the claim's seed, so its memory ids derive from the key: when the first attempt failed with an
unknown outcome (a 5xx, a timeout) the claim is released and the retry runs again, and when it
crashed the retry takes the claim over once the lease ended. Either way the retry looks at the
store (create-only writes find the first attempt's document) instead of writing a second one.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from atlas_platform.api import error_body
from memory.errors import IdempotencyInProgress, IdempotencyKeyReused
from memory.models import IDEMPOTENCY_TTL, IdempotencyRecord
from tenants.models import PlatformToken, User


@dataclass(frozen=True)
class StoredResponse:
    """What a replay answers with."""

    status_code: int
    body: Any


def request_fingerprint(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def _lease() -> datetime:
    return timezone.now() + timedelta(seconds=settings.ATLAS_WRITE_LEASE_S)


def claim_seed(record: IdempotencyRecord) -> str:
    """What the write's memory ids derive from: the tenant, the token and the claim (the key's
    record: kept while retries run, replaced only once it expired, so a key used again a day
    later is a new write)."""
    return f"idem:{record.token.tenant_id}:{record.token_id}:{record.pk}"


def idempotency_claim(
    *, token: PlatformToken, key: str, request_line: str, request_hash: str
) -> IdempotencyRecord | StoredResponse:
    """A new in-progress record for ``key`` (go ahead), or the stored response (replay it)."""
    for _ in range(3):  # more passes after removing an expired record or losing a takeover
        try:
            with transaction.atomic():
                return IdempotencyRecord.objects.create(
                    token=token,
                    key=key,
                    request_line=request_line,
                    request_hash=request_hash,
                    lease_until=_lease(),
                )
        except IntegrityError:
            existing = IdempotencyRecord.objects.filter(token=token, key=key).first()
        if existing is None:  # released in the meantime
            continue
        if _expired(existing):
            existing.delete()
            continue
        answer = _answer(existing, request_line=request_line, request_hash=request_hash)
        if answer is not None:
            return answer
        # The first attempt's lease ended without an outcome (its process died): take over.
        taken = IdempotencyRecord.objects.filter(
            pk=existing.pk, status_code=None, lease_until=existing.lease_until
        ).update(lease_until=_lease())
        if taken:
            existing.refresh_from_db()
            return existing
    raise IdempotencyInProgress(
        "Another request with this Idempotency-Key is running.",
        retry_after=settings.ATLAS_WRITE_LEASE_S,
    )


def _expired(record: IdempotencyRecord) -> bool:
    return record.created_at <= timezone.now() - IDEMPOTENCY_TTL


def _answer(
    record: IdempotencyRecord, *, request_line: str, request_hash: str
) -> StoredResponse | None:
    """The stored response; None when the first attempt's lease is over (take it over)."""
    if (record.request_line, record.request_hash) != (request_line, request_hash):
        raise IdempotencyKeyReused(
            "This Idempotency-Key was already used for a different request.",
            first_request=record.request_line,
        )
    if record.status_code is not None:
        return StoredResponse(status_code=record.status_code, body=record.response_body)
    lease = record.lease_until or record.created_at + timedelta(
        seconds=settings.ATLAS_WRITE_LEASE_S
    )
    left = (lease - timezone.now()).total_seconds()
    if left <= 0:
        return None
    raise IdempotencyInProgress(
        "The first request with this Idempotency-Key has not finished; retry shortly.",
        retry_after=max(1, math.ceil(left)),
    )


def idempotency_complete(*, record: IdempotencyRecord, status_code: int, body: Any) -> None:
    """Store the response the first request got (JSON-encoded as the client saw it)."""
    record.status_code = status_code
    record.response_body = body
    record.lease_until = None
    record.save(update_fields=["status_code", "response_body", "lease_until"])


def idempotency_release(*, record: IdempotencyRecord) -> None:
    """Forget a claim whose request was refused (4xx: it wrote nothing), so the key may carry
    a corrected request."""
    IdempotencyRecord.objects.filter(pk=record.pk).delete()


def idempotency_unknown(*, record: IdempotencyRecord) -> None:
    """The request failed with an unknown outcome (5xx): the write may be in the store. The
    claim stays with its lease ended, so the retry takes it over at once and runs under the
    same memory ids: it finds what this attempt stored instead of writing it again."""
    IdempotencyRecord.objects.filter(pk=record.pk, status_code=None).update(
        lease_until=timezone.now()
    )


def idempotency_purge() -> int:
    """Delete records past their 24 h lifetime; returns how many went."""
    cutoff = timezone.now() - IDEMPOTENCY_TTL
    deleted, _ = IdempotencyRecord.objects.filter(created_at__lte=cutoff).delete()
    return deleted


FORGOTTEN = 410
FORGOTTEN_MESSAGE = (
    "The response to this request quoted a memory that was since forgotten; it is not kept. "
    "The request is not run again."
)


def user_records(user: User) -> Q:
    """The records of requests for ``user``: through the user's own tokens, and tenant tokens'
    requests on the user's paths."""
    return Q(token__user=user) | Q(
        token__tenant_id=user.tenant_id,
        token__user__isnull=True,
        request_line__contains=f"/users/{user.external_id}/",
    )


def idempotency_forget(*, user: User, memory_id: str) -> int:
    """Redact the user's stored responses that hold ``memory_id`` (the write that made it, a
    turn or recall that quoted it): a replay answers 410 without the text. The record stays,
    so the key still replays (the forgotten write is never run again by a retry); returns how
    many were redacted."""
    holding = (
        IdempotencyRecord.objects.filter(user_records(user), status_code__isnull=False)
        .annotate(body_text=Cast("response_body", TextField()))
        .filter(body_text__contains=memory_id)
    )
    gone = error_body("forgotten", FORGOTTEN_MESSAGE)
    gone["error"]["request_id"] = None  # the request it answered is long over
    return holding.update(status_code=FORGOTTEN, response_body=gone)
