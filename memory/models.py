"""Models of the memory app.

Memories themselves live in the memory engine, not in the database; the tables here are the
per-tenant recall statistics and the intents of store writes (the keys callers name for their
writes are in the platform's exactly-once ledger, ``atlas_platform.ledger``).
"""

from __future__ import annotations

from django.db import models

from tenants.models import Tenant, User

# Upper bounds (ms) of the recall latency histogram; a recall slower than the last one lands in
# the ``OVERFLOW_MS`` bucket. Fixed buckets make recording one UPDATE and percentiles exact to
# the bucket, with no per-recall rows to keep.
LATENCY_BOUNDS_MS = (5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000)
OVERFLOW_MS = 2_147_483_647


class RecallStat(models.Model):
    """How many of a tenant's recalls in one UTC hour took at most ``le_ms`` (and more than the
    previous bound), and their summed time. The tenant dashboard's volume and percentiles."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    hour = models.DateTimeField()
    le_ms = models.PositiveIntegerField()
    count = models.PositiveIntegerField(default=0)
    total_ms = models.FloatField(default=0.0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "hour", "le_ms"], name="recall_stat_bucket_once"
            )
        ]

    def __str__(self) -> str:
        return f"{self.tenant_id} {self.hour:%Y-%m-%d %H}h <= {self.le_ms} ms: {self.count}"


class WriteIntent(models.Model):
    """A store write about to happen, recorded (committed) before the store is called: the
    memory's id, whose it is and whether its audit row exists yet.

    ``pending``: the store may or may not hold the memory, and no audit row names it. The
    write's own request settles it (``audited``: the audit row was written in the transaction
    that moved the state); a retry of the same write (the same id, derived from its
    ``Idempotency-Key`` or operation id) finds it and settles it; past
    ``ATLAS_INTENT_GRACE_S`` the reconciler takes the memory back out of the store
    (``memory.services.intents.intents_reconcile``). ``replayable``: a ledger may send the same
    write again, so the settled row is kept (until the ledger forgets its keys) to answer
    "already audited"; other intents are deleted once settled.
    """

    class State(models.TextChoices):
        PENDING = "pending", "Store write not settled"
        AUDITED = "audited", "Stored and audited"

    memory_id = models.CharField(max_length=64, unique=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    user_id_text = models.CharField(max_length=64, blank=True)  # "" for the tenant catalog
    memory_type = models.CharField(max_length=16)
    state = models.CharField(max_length=8, choices=State.choices, default=State.PENDING)
    replayable = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True, db_index=True)

    def __str__(self) -> str:
        return f"{self.memory_id} ({self.state})"


class SessionCursor(models.Model):
    """Which conversation session a user's turns from one agent are in now: the session of the
    newest turn recorded live, and that turn's time. A turn sent without a ``session_id`` joins
    ``session_id`` when its time is within ``ATLAS_SESSION_GAP_S`` of ``last_turn_at``, else it
    opens a new (inferred) session (``memory.services.sessions.session_for_turn``). Ids and
    times only: never any text."""

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="+")
    agent = models.TextField(blank=True)  # "" for turns sent without an agent
    session_id = models.TextField()
    inferred = models.BooleanField(default=False)
    last_turn_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "agent"], name="session_cursor_once")
        ]

    def __str__(self) -> str:
        return f"{self.user_id}/{self.agent or '-'}: {self.session_id}"
