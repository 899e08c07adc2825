"""The platform's tables: the outbox of background jobs still to be sent to the broker, and
the exactly-once ledger of the keys callers name for their writes."""

from __future__ import annotations

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.utils import timezone


class OutboxJob(models.Model):
    """A job a service queued whose message the broker has not taken yet.

    Written in the transaction that decided the job (so it exists exactly when the decision
    committed), deleted once the broker took the message. A row that stays (the broker was
    down, slow or frozen) is sent again by ``jobs_flush`` (beat every 30 s, and at worker
    start) once the broker is back. ``ref`` names what the job is for (``consolidation.run:42``)
    so a caller can tell "queued" from "waiting for the broker".
    """

    name = models.CharField(max_length=200)
    args = models.JSONField(default=list)
    queue = models.CharField(max_length=200)
    ref = models.CharField(max_length=200, blank=True, db_index=True)
    attempts = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.name}{tuple(self.args)}"


class LedgerEntry(models.Model):
    """One key a caller named for a write, claimed before the write ran and answered after
    (``atlas_platform.ledger``: the rules): an ``Idempotency-Key`` of a token (``scope``
    ``token:<pk>``) or an operation id of a user (``user:<pk>``, ``owner`` the agent
    ``agent:<pk>`` that applied it: only it is answered).

    ``status_code`` is null while the first attempt runs, for at most its lease
    (``lease_until``; past it a retry takes the claim over and runs the write again under the
    same ``seed``: the same memory ids, so it finds what the first attempt stored). Past
    ``expires_at`` the entry no longer counts (24 h for a token's key,
    ``ATLAS_OPERATION_TTL_DAYS`` for an operation id) and the hourly purge drops it.

    The platform imports no app: tenant, user, token and agent are named by plain ids. Erasure
    note: ``response`` is the answer the client already got and may hold memory text; every
    erasure deletes the user's entries (``user_pk``, and tenant-wide callers' requests on the
    user's paths), a forgotten memory's answers are redacted (``ledger_forget``).
    """

    scope = models.CharField(max_length=64)  # where the key is unique: "token:12", "user:34"
    key = models.CharField(max_length=255)
    owner = models.CharField(max_length=64, blank=True)  # "agent:5"; "": anyone in the scope
    tenant_pk = models.BigIntegerField()
    user_pk = models.BigIntegerField(null=True, blank=True)  # None: a tenant-wide token's key
    # What the key named first: "POST /api/v1/users/alice/memories", or an operation's kind.
    request = models.TextField()
    request_hash = models.CharField(max_length=64)
    seed = models.CharField(max_length=255)  # what the write's memory ids derive from
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    response = models.JSONField(null=True, blank=True, encoder=DjangoJSONEncoder)
    created_at = models.DateTimeField(default=timezone.now)
    lease_until = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["scope", "key"], name="ledger_key_once_per_scope")
        ]
        indexes = [models.Index(fields=["tenant_pk", "user_pk"], name="ledger_entry_user")]

    def __str__(self) -> str:
        return f"{self.scope} {self.request} [{self.key}]"
