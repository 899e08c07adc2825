"""The REST API's idempotency ledger: claim a key, then record or release the outcome.

A retry with the same token, key, request line and body gets the stored response back and
writes nothing; the same key with another request is refused (422); a duplicate that arrives
while the first is still running is refused (409) and may retry. The unique constraint on
(token, key) decides races.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from memory.errors import IdempotencyInProgress, IdempotencyKeyReused
from memory.models import IDEMPOTENCY_TTL, IdempotencyRecord
from tenants.models import PlatformToken


@dataclass(frozen=True)
class StoredResponse:
    """What a replay answers with."""

    status_code: int
    body: Any


def request_fingerprint(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def idempotency_claim(
    *, token: PlatformToken, key: str, request_line: str, request_hash: str
) -> IdempotencyRecord | StoredResponse:
    """A new in-progress record for ``key`` (go ahead), or the stored response (replay it)."""
    for _ in range(2):  # a second pass after removing an expired record
        try:
            with transaction.atomic():
                return IdempotencyRecord.objects.create(
                    token=token, key=key, request_line=request_line, request_hash=request_hash
                )
        except IntegrityError:
            existing = IdempotencyRecord.objects.filter(token=token, key=key).first()
        if existing is None:  # released in the meantime
            continue
        if _expired(existing):
            existing.delete()
            continue
        return _answer(existing, request_line=request_line, request_hash=request_hash)
    raise IdempotencyInProgress("Another request with this Idempotency-Key is running.")


def _expired(record: IdempotencyRecord) -> bool:
    return record.created_at <= timezone.now() - IDEMPOTENCY_TTL


def _answer(record: IdempotencyRecord, *, request_line: str, request_hash: str) -> StoredResponse:
    if (record.request_line, record.request_hash) != (request_line, request_hash):
        raise IdempotencyKeyReused(
            "This Idempotency-Key was already used for a different request.",
            first_request=record.request_line,
        )
    if record.status_code is None:  # still running
        raise IdempotencyInProgress(
            "The first request with this Idempotency-Key has not finished; retry shortly."
        )
    return StoredResponse(status_code=record.status_code, body=record.response_body)


def idempotency_complete(*, record: IdempotencyRecord, status_code: int, body: Any) -> None:
    """Store the response the first request got (JSON-encoded as the client saw it)."""
    record.status_code = status_code
    record.response_body = body
    record.save(update_fields=["status_code", "response_body"])


def idempotency_release(*, record: IdempotencyRecord) -> None:
    """Forget a claim whose request failed (it wrote nothing), so a retry runs again."""
    IdempotencyRecord.objects.filter(pk=record.pk).delete()


def idempotency_purge() -> int:
    """Delete records past their 24 h lifetime; returns how many went."""
    cutoff = timezone.now() - IDEMPOTENCY_TTL
    deleted, _ = IdempotencyRecord.objects.filter(created_at__lte=cutoff).delete()
    return deleted
