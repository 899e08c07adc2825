"""Models of the memory app.

Memories themselves live in the memory engine, not in the database; the only table here is the
REST API's idempotency ledger.
"""

from __future__ import annotations

from datetime import timedelta

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from tenants.models import PlatformToken

IDEMPOTENCY_TTL = timedelta(hours=24)


class IdempotencyRecord(models.Model):
    """One ``Idempotency-Key`` a token used for a write, and the response it got.

    ``status_code`` is null while the first request is still running. A record older than
    ``IDEMPOTENCY_TTL`` is treated as absent (and replaced) when its key comes back.

    Erasure note: ``response_body`` is the response the client already received and may hold
    memory text (for at most 24 h). Forget requests that erase a user's text must also delete
    that user's records here (``idempotency_purge`` removes expired ones).
    """

    token = models.ForeignKey(
        PlatformToken, on_delete=models.CASCADE, related_name="idempotency_records"
    )
    key = models.CharField(max_length=255)
    request_line = models.TextField()  # "POST /api/v1/users/alice/memories"
    request_hash = models.CharField(max_length=64)  # sha256 of the raw request body
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    response_body = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["token", "key"], name="idempotency_key_once_per_token")
        ]

    def __str__(self) -> str:
        return f"{self.request_line} [{self.key}]"
