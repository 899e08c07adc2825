"""Exactly-once store writes: identities fixed before the store is touched, create-only writes,
and a recorded intent tying each write to its audit row.

The one mechanism behind the exactly-once ledger (``atlas_platform.ledger``: the REST
``Idempotency-Key``, ``atlas_platform.idempotency``, and the agents' operation ids,
``agents.services.operations``):

1. A ledger claim that may send the same write again runs it inside ``replayable(seed)``: the
   claim's seed names the write (tenant, token or user, key or operation id), and every memory
   id the write makes is derived from it (``next_memory_id``), so a retry makes the same ids.
2. Before the store is called, ``intent_record`` commits a ``WriteIntent`` row per memory id
   (``pending``). The store write is create-only: a document that exists already (the first
   attempt's) is found, not written again (``MemoryBackend.create``).
3. ``intent_settle`` writes the audit row in the transaction that moves the intent to
   ``audited``; a retry that finds the intent audited writes no second row.
4. ``intents_reconcile`` (beat, every minute) takes back what nobody settled: a pending intent
   older than ``ATLAS_INTENT_GRACE_S`` whose memory is in the store without its audit row is
   taken out of the store (the client never got a success for it), then the intent goes.

So a crash, a timeout or a 5xx at any point leaves the store and the audit trail agreeing, or a
pending intent the retry or the reconciler settles.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import logging
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from memory.engine.types import MemoryDoc, ReadScope
from memory.models import WriteIntent
from tenants.models import Tenant

logger = logging.getLogger(__name__)


@dataclass
class _Identity:
    seed: str
    made: int = 0


_identity: contextvars.ContextVar[_Identity | None] = contextvars.ContextVar(
    "atlas_write_identity", default=None
)


def derived_id(seed: str, n: int) -> str:
    """The ``n``-th memory id of the write named ``seed`` (32 hex digits, as a uuid4 hex)."""
    return hashlib.sha256(f"{seed}\x00{n}".encode()).hexdigest()[:32]


@contextlib.contextmanager
def replayable(seed: str) -> Iterator[None]:
    """Run a write whose memory ids derive from ``seed``: running it again makes the same ids."""
    token = replay_begin(seed)
    try:
        yield
    finally:
        replay_end(token)


def replay_begin(seed: str) -> contextvars.Token[_Identity | None]:
    """``replayable`` in two halves, for a caller whose start and end are separate hooks (the
    REST ledger: the claim in ``initial``, the outcome in ``finalize_response``; registered
    with ``atlas_platform.idempotency.register_write_identity`` by ``MemoryConfig.ready``)."""
    return _identity.set(_Identity(seed))


def replay_end(token: contextvars.Token[_Identity | None]) -> None:
    _identity.reset(token)


def is_replayable() -> bool:
    return _identity.get() is not None


def next_memory_id() -> str:
    """A new memory's id: derived inside ``replayable``, random otherwise."""
    identity = _identity.get()
    if identity is None:
        return uuid.uuid4().hex
    memory_id = derived_id(identity.seed, identity.made)
    identity.made += 1
    return memory_id


def intent_record(docs: list[MemoryDoc]) -> None:
    """Commit a pending intent per document, before the store is called (a retry keeps the
    state its earlier attempt left: an audited intent stays audited)."""
    intents_record_many(docs, [is_replayable()] * len(docs))


def intents_record_many(docs: Sequence[MemoryDoc], replayable: Sequence[bool]) -> None:
    """``intent_record`` for many writes in one transaction; ``replayable``: per document,
    whether a ledger may send its write again."""
    # Documents carry the tenant's memory id (its uid's hex), not its primary key.
    uids = Tenant.objects.filter(uid__in={uuid.UUID(d.tenant_id) for d in docs})
    tenants = {uid.hex: pk for uid, pk in uids.values_list("uid", "pk")}
    rows = [
        WriteIntent(
            memory_id=doc.id,
            tenant_id=tenants[uuid.UUID(doc.tenant_id).hex],
            user_id_text=doc.user_id or "",
            memory_type=doc.memory_type,
            replayable=replay,
        )
        for doc, replay in zip(docs, replayable, strict=True)
    ]
    with transaction.atomic():
        WriteIntent.objects.bulk_create(rows, ignore_conflicts=True)


def intent_exists(memory_id: str) -> bool:
    """Whether an attempt of the write of ``memory_id`` left an intent (pending or audited).
    One indexed lookup, without the ORM: a batch of writes asks it once per write, and the
    ORM's query building cost ~8x the lookup itself."""
    table = connection.ops.quote_name(WriteIntent._meta.db_table)
    column = connection.ops.quote_name(WriteIntent._meta.get_field("memory_id").column)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT 1 FROM {table} WHERE {column} = %s LIMIT 1", [memory_id])  # noqa: S608 - quoted names
        return cursor.fetchone() is not None


def intent_settle(doc: MemoryDoc, audit: Callable[[], object]) -> bool:
    """Write the audit row (``audit``) in the transaction that moves the document's intent from
    pending to audited. False when an earlier attempt of the same write did it already (nothing
    written). Rows only: called after the store write, never around it."""
    return bool(intents_settle_many([doc], lambda _: audit()))


def intents_settle_many(
    docs: Sequence[MemoryDoc], audit: Callable[[list[MemoryDoc]], object]
) -> list[MemoryDoc]:
    """``intent_settle`` for many writes in one transaction: the audit rows of the documents
    whose intent moves to audited (or that have none) written by one ``audit(those)`` call;
    returns those documents (an earlier attempt's audited ones are not among them)."""
    ids = [doc.id for doc in docs]
    with transaction.atomic():
        pending = WriteIntent.objects.filter(memory_id__in=ids, state=WriteIntent.State.PENDING)
        moved = set(pending.select_for_update().values_list("memory_id", flat=True))
        if moved:
            WriteIntent.objects.filter(memory_id__in=moved).update(
                state=WriteIntent.State.AUDITED, updated_at=timezone.now()
            )
        known = moved
        if len(moved) < len(set(ids)):  # some have no pending intent: audited before, or none
            known = set(
                WriteIntent.objects.filter(memory_id__in=ids).values_list("memory_id", flat=True)
            )
        audited = [doc for doc in docs if doc.id in moved or doc.id not in known]
        if audited:
            audit(audited)
        WriteIntent.objects.filter(memory_id__in=ids, replayable=False).delete()
    return audited


def intent_abandon(doc: MemoryDoc) -> None:
    """The write took its document back out of the store itself (its audit row failed, or it
    lost a race): nothing is left to settle."""
    intents_abandon_many([doc])


def intents_abandon_many(docs: Sequence[MemoryDoc]) -> None:
    WriteIntent.objects.filter(
        memory_id__in=[d.id for d in docs], state=WriteIntent.State.PENDING
    ).delete()


def pending_intents() -> int:
    """How many writes are not settled yet (the metrics endpoint's gauge)."""
    return WriteIntent.objects.filter(state=WriteIntent.State.PENDING).count()


def intents_reconcile(
    *,
    take_back: Callable[[MemoryDoc], None],
    read: Callable[[ReadScope, str], MemoryDoc | None],
    older_than: timedelta | None = None,
    limit: int = 500,
) -> int:
    """Settle pending intents nobody came back for: a memory still in the store without its
    audit row is taken back (``take_back``), then the intent is dropped. Returns how many
    memories were taken back. ``read`` looks the memory up in the store with the writer's
    credential."""
    grace = older_than or timedelta(seconds=settings.ATLAS_INTENT_GRACE_S)
    cutoff = timezone.now() - grace
    taken = 0
    stale = WriteIntent.objects.filter(
        state=WriteIntent.State.PENDING, updated_at__lte=cutoff
    ).select_related("tenant")
    for intent in stale.order_by("updated_at")[:limit]:
        scope = ReadScope(
            tenant_id=intent.tenant.memory_id,
            user_id=intent.user_id_text or None,
            isolation="filter",
        )
        doc = read(scope, intent.memory_id)
        # Claim it: a retry that touched the intent meanwhile (updated_at moved) keeps it.
        gone, _ = WriteIntent.objects.filter(
            pk=intent.pk, state=WriteIntent.State.PENDING, updated_at=intent.updated_at
        ).delete()
        if not gone or doc is None:
            continue
        try:
            take_back(doc)
        except Exception:
            # Put the intent back so the next pass tries again.
            WriteIntent.objects.get_or_create(
                memory_id=intent.memory_id,
                defaults={
                    "tenant_id": intent.tenant_id,
                    "user_id_text": intent.user_id_text,
                    "memory_type": intent.memory_type,
                    "replayable": intent.replayable,
                },
            )
            logger.warning("reconcile: could not take a memory back", extra={"id": doc.id})
            continue
        taken += 1
        logger.info("reconcile: took back an unsettled write", extra={"memory_id": doc.id})
    return taken


def intents_purge() -> int:
    """Drop settled intents the ledger no longer replays (older than its longest lifetime)."""
    days = max(settings.ATLAS_OPERATION_TTL_DAYS, 1) + 1
    cutoff = timezone.now() - timedelta(days=days)
    deleted, _ = WriteIntent.objects.filter(
        state=WriteIntent.State.AUDITED, updated_at__lte=cutoff
    ).delete()
    return deleted
