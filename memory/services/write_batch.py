"""Writes of a ``memory_writes_together`` block written as one batch: the store called once,
the intents recorded together and the audit rows settled together, when the block ends.

Inside the block, a new fact or playbook that supersedes nothing is held back
(``write_defer``) instead of being written at once: its checks ran, its id is fixed (derived
under ``replayable``) and its vector was embedded with the block's others. When the block ends
(``WriteBatch.flush``), in the order of ``memory.services.intents``:

1. one transaction records a pending intent per document (``intents_record_many``);
2. one store call creates them all (create-only: a document found there already is read back,
   as a single write does), one refresh for all where the store refreshes;
3. one transaction moves the intents to audited and writes each document's audit row
   (``intents_settle_many``). If that fails, the store writes are taken back (best effort; what
   is left keeps its pending intent for the retry or the reconciler) and the error goes up.

So exactly what a single write guarantees holds per document: a retry under the same seed
finds what an earlier attempt stored and audited. A write whose id has an intent already (an
earlier attempt of the same operation) is not held back: it runs alone, on the single path,
which reads what that attempt left.
"""

from __future__ import annotations

import contextvars
import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Any

from memory.engine.types import MemoryDoc
from memory.services.common import backend
from memory.services.intents import (
    intent_exists,
    intents_abandon_many,
    intents_record_many,
    intents_settle_many,
    is_replayable,
)
from memory.services.scoping import writer_scope
from tenants.models import User
from tenants.services.audit import AuditEntry, audit_record_many

logger = logging.getLogger(__name__)


@dataclass
class _Held:
    user: User
    doc: MemoryDoc
    action: str
    extra: dict[str, Any]
    replayable: bool


@dataclass
class WriteBatch:
    """The writes held back by the innermost ``memory_writes_together`` block."""

    held: list[_Held] = field(default_factory=list)

    def flush(self) -> None:
        """Write what is held (see the module): the store once, intents and audits together.
        Store failures raise ``EngineError``; database failures their own error."""
        held, self.held = self.held, []
        if not held:
            return
        docs = [h.doc for h in held]
        intents_record_many(docs, [h.replayable for h in held])
        existing = backend().create(docs)
        # An attempt of some was stored meanwhile: answer with what it stored.
        _adopt_stored([doc for doc in docs if doc.id in existing])
        by_id = {h.doc.id: h for h in held}
        try:
            intents_settle_many(docs, lambda audited: _audit([by_id[d.id] for d in audited]))
        except Exception:
            _take_back(docs)
            raise

    def add(self, held: _Held) -> None:
        self.held.append(held)


_batch: contextvars.ContextVar[WriteBatch | None] = contextvars.ContextVar(
    "atlas_write_batch", default=None
)


def write_batch_open() -> contextvars.Token[WriteBatch | None]:
    return _batch.set(WriteBatch())


def write_batch_close(token: contextvars.Token[WriteBatch | None], *, flush: bool) -> None:
    """End the block: its held writes are written (``flush``), or dropped (the block failed
    before any of them reached the store)."""
    batch = _batch.get()
    _batch.reset(token)
    if flush and batch is not None:
        batch.flush()


def write_batch_flush() -> None:
    """Write what the open block holds now (a write that reads the store, a supersession or a
    forget inside the block, must find the block's earlier writes there)."""
    batch = _batch.get()
    if batch is not None and batch.held:
        batch.flush()
        backend().sync()  # searchable now, not at the block's end


def write_defer(user: User, doc: MemoryDoc, action: str, **extra: Any) -> bool:
    """Hold ``doc`` back for the block's one write; False (write it now) outside a block, or
    when an earlier attempt of the same write left an intent (the single path reads it)."""
    batch = _batch.get()
    if batch is None or intent_exists(doc.id):
        return False
    batch.add(_Held(user, doc, action, extra, is_replayable()))
    return True


def _audit(held: list[_Held]) -> None:
    """The audit rows of held writes, in one INSERT (ids and kinds only, as
    ``writes._audit``'s)."""
    audit_record_many(
        [
            AuditEntry(
                action=h.action,
                tenant=h.user.tenant,
                subject_user=h.user,
                metadata={"memory_id": h.doc.id, "memory_type": h.doc.memory_type, **h.extra},
            )
            for h in held
        ]
    )


def _adopt_stored(docs: list[MemoryDoc]) -> None:
    """Each of ``docs`` takes the fields of the document stored under its id (one read per
    owner); one forgotten since is left as it is."""
    owners: dict[tuple[str, str], list[MemoryDoc]] = {}
    for doc in docs:
        owners.setdefault((doc.tenant_id, doc.user_id or ""), []).append(doc)
    for (tenant_id, user_id), mine in owners.items():
        scope = writer_scope(tenant_id=tenant_id, user_id=user_id)
        stored = {s.id: s for s in backend().get_many(scope, [doc.id for doc in mine])}
        for doc in mine:
            if doc.id in stored:
                for f in dataclasses.fields(stored[doc.id]):
                    if f.name != "embedding":
                        setattr(doc, f.name, getattr(stored[doc.id], f.name))


def _take_back(docs: list[MemoryDoc]) -> None:
    """The audit rows failed: the batch's documents out of the store again, their intents
    dropped; a document that cannot be taken back keeps its intent (retry or reconciler)."""
    gone: list[MemoryDoc] = []
    for doc in docs:
        try:
            backend().delete(doc)
        except Exception:
            logger.warning("a batched write without its audit row is left to its reconciler")
            continue
        gone.append(doc)
    try:
        intents_abandon_many(gone)
    except Exception:
        logger.warning("batched writes taken back keep their intents for the reconciler")
