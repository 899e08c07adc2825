"""Exactly-once replay of offline work: a batch of client operations, each applied in its own
transaction and answered on its own.

Per operation: ``applied`` (its result), ``duplicate`` (the same id and payload again, within
``ATLAS_OPERATION_TTL_DAYS``: the first result, nothing applied), ``conflict`` (409, the
server's state), ``rejected`` (4xx: invalid, not found, or the same id with another payload,
422; or 500 ``internal_error``: a failure of ours that no validation caught, logged; nothing of
it kept), ``retry`` (503: the store or the database is unavailable, nothing recorded; send it
again later). Whatever one operation meets, the others are applied and answered: a batch
answers 200 with one outcome per operation (only a batch that does not parse is a 400).

Every operation id goes through the exactly-once ledger (``atlas_platform.ledger``: the
rules it shares with the REST ``Idempotency-Key``), scoped to the user and owned by the agent
that sent it: another agent's id is refused (409), never answered with its result.

Operations on rows only are claimed and applied in one transaction, so a claim exists exactly
when the work committed. An operation that writes to the memory store cannot be (the store is
never called inside a transaction): it is claimed first (pending, committed), applied, then
its answer stored; a duplicate that meets a pending claim is answered ``retry``, and a claim
left pending past its lease (``ATLAS_WRITE_LEASE_S``) by a dead process is taken over. Such an
operation runs inside ``memory.services.intents.replayable`` with the claim's seed (the user,
the operation id and its payload): its memory ids derive from them, so running it again (after
a 503, a timeout or a crash) finds what the earlier attempt stored and audited instead of
writing it twice.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction

from agents.models import Agent
from agents.selectors import ledger_owner, ledger_scope
from atlas_platform.exceptions import AtlasError, Unavailable
from atlas_platform.ledger import (
    Claim,
    KeyInProgress,
    KeyOfAnotherOwner,
    KeyReused,
    Replay,
    ledger_claim,
    ledger_claim_fresh,
    ledger_complete,
    ledger_complete_many,
    ledger_release,
    ledger_release_many,
    ledger_unknown_many,
)
from atlas_platform.models import LedgerEntry
from memory.public import memory_writes_together, replayable
from tenants.models import User

logger = logging.getLogger(__name__)
Status = Literal["applied", "duplicate", "conflict", "rejected", "retry"]
DATABASE_DOWN = {
    "code": "database_unavailable",
    "message": "The database is unavailable; this operation was not applied. Send it again.",
}
INTERNAL = {
    "code": "internal_error",
    "message": (
        "Something went wrong on our side applying this operation; it was not applied, and "
        "the others were answered on their own. Quote the request id if you report it."
    ),
}


class OperationIdReused(AtlasError):
    status_code = 422
    code = "operation_id_reused"


class OperationIdOfAnotherAgent(AtlasError):
    status_code = 409
    code = "operation_id_of_another_agent"


class OperationBatchTooLarge(AtlasError):
    status_code = 400
    code = "batch_too_large"


def payload_hash(kind: str, payload: Any) -> str:
    """The fingerprint of an operation: its kind and its payload, canonically encoded."""
    canonical = json.dumps([kind, payload], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


# Given the texts of a run of operations of one kind, the block they are applied in as one
# batch (``memory_writes_together``, ``searchable_writes_together``).
Block = Callable[[Sequence[str]], AbstractContextManager[None]]


@dataclass(frozen=True)
class Operation:
    """One parsed operation: ``run`` applies it and returns its JSON result. ``invalid``: its
    payload did not parse (answered ``rejected`` unless the id was applied before)."""

    id: str
    kind: str
    request_hash: str
    run: Callable[[], dict[str, Any]]
    status_code: int = 200
    touches_store: bool = False
    invalid: AtlasError | None = None
    together: str | None = None  # its text, embedded with its run's (``block``)
    block: Block | None = None  # the block a run of its kind is written in as one batch
    args: dict[str, Any] | None = None  # its parsed arguments
    # Given the claimed operations' args, applies a run of its kind at once (inside the
    # block); each one's ``run`` then answers its own (entity upserts).
    prepare: Callable[[Sequence[dict[str, Any]]], None] | None = None


@dataclass(frozen=True)
class Outcome:
    id: str
    status: Status
    status_code: int
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = field(default=None)


def _error(exc: AtlasError) -> dict[str, Any]:
    body: dict[str, Any] = {"code": exc.code, "message": exc.message}
    if exc.details:
        body["details"] = exc.details
    return body


def _refused(op: Operation, exc: AtlasError) -> Outcome:
    if isinstance(exc, Unavailable):
        return Outcome(op.id, "retry", exc.status_code, error=_error(exc))
    status: Status = "conflict" if exc.status_code == 409 else "rejected"
    return Outcome(op.id, status, exc.status_code, error=_error(exc))


def operations_apply(
    *, user: User, operations: Sequence[Operation], agent: Agent | None = None
) -> list[Outcome]:
    """Apply the operations in order, each in its own transaction, each answered alone: one
    that fails never undoes or blocks the others. ``agent``: who sends them; an id the
    ledger holds for another agent of the user is refused (409), never answered with that
    agent's result."""
    if len(operations) > settings.ATLAS_OPERATION_BATCH_MAX:
        raise OperationBatchTooLarge(
            f"A batch holds at most {settings.ATLAS_OPERATION_BATCH_MAX} operations."
        )
    outcomes: list[Outcome] = []
    for run in _runs(operations):
        if len(run) > 1:
            outcomes += _apply_together(user, agent, run)
        else:
            outcomes.append(_apply_one(user, agent, run[0]))
    return outcomes


def _runs(operations: Sequence[Operation]) -> list[list[Operation]]:
    """Consecutive operations written together (``together``, the same ``block``: plain
    memory writes, entity upserts) grouped; every other operation alone. An id met again
    starts a new run (it is answered from the first one's stored result)."""
    runs: list[list[Operation]] = []
    for op in operations:
        run = runs[-1] if runs else []
        if (
            _joins(op)
            and run
            and _joins(run[-1])
            and _block(run[-1]) is _block(op)
            and op.id not in {o.id for o in run}
        ):
            run.append(op)
        else:
            runs.append([op])
    return runs


def _joins(op: Operation) -> bool:
    return op.together is not None and op.invalid is None


def _block(op: Operation) -> Block:
    return op.block or memory_writes_together


Settled = tuple[LedgerEntry, Outcome]  # a store write applied, its answer not stored yet


def _apply_together(user: User, agent: Agent | None, run: list[Operation]) -> list[Outcome]:
    """A run of plain memory writes (or of entity upserts) written as one batch: claimed
    together (one transaction), their texts embedded in one call, the memories written to the
    store in one call with their intents and audit rows settled together, one refresh
    (``memory_writes_together``; entity upserts: ``searchable_writes_together``, their
    documents in one store write), then their answers stored together (one transaction).
    Each is still checked and answered on its own (an invalid one is rejected alone, a
    duplicate answered from its first result). The answers are stored after the block, so
    ``applied`` means stored, audited and searchable; if the block's write fails, the writes
    it held are answered ``retry`` and their claims released (a retry runs under the same ids
    and finds whatever was stored)."""
    outcomes: list[Outcome] = []
    settled: list[Settled] = []
    try:
        with _block(run[0])([op.together or "" for op in run]):
            claims = _claim_run(user, agent, run)
            _prepare(run, claims)
            for op in run:
                claimed = claims[op.id]
                if isinstance(claimed, Outcome):
                    outcomes.append(claimed)
                    continue
                outcomes.append(_apply_one(user, agent, op, settled, claimed))
    except (Unavailable, OperationalError, InterfaceError) as exc:
        logger.warning("a run of %d memory writes was not written", len(run), exc_info=exc)
        with contextlib.suppress(OperationalError, InterfaceError):
            ledger_release_many(entries=[entry for entry, _ in settled])
        held = {entry.key for entry, _ in settled}
        return [
            _not_written(op, exc) if n >= len(outcomes) or op.id in held else outcomes[n]
            for n, op in enumerate(run)
        ]
    try:
        ledger_complete_many(
            answers=[(entry, outcome.status_code, outcome.result) for entry, outcome in settled]
        )
    except (OperationalError, InterfaceError) as exc:  # stored and audited; a retry finds them
        logger.warning("the answers of a run of memory writes were not stored", exc_info=exc)
        with contextlib.suppress(OperationalError, InterfaceError):  # a retry takes them over
            ledger_unknown_many(entries=[entry for entry, _ in settled])
        held = {entry.key for entry, _ in settled}
        return [
            _not_written(op, exc) if op.id in held else o
            for op, o in zip(run, outcomes, strict=True)
        ]
    return outcomes


def _claim_run(
    user: User, agent: Agent | None, run: list[Operation]
) -> dict[str, LedgerEntry | Outcome]:
    """Every operation's claim (or its answer: a duplicate, a refusal), in one transaction:
    the new ids' claims in one INSERT, then an id the ledger holds already alone."""
    claims: dict[str, LedgerEntry | Outcome] = {}
    with transaction.atomic():
        claims.update(ledger_claim_fresh([_ledger_claim(user, agent, op) for op in run]))
        for op in run:
            if op.id in claims:
                continue
            try:
                claims[op.id] = _claim(user, agent, op)
            except AtlasError as exc:
                claims[op.id] = _refused(op, exc)
    return claims


def _prepare(run: list[Operation], claims: dict[str, LedgerEntry | Outcome]) -> None:
    """A kind that applies a run at once (``prepare``) gets the claimed operations' args: the
    ones answered already (a duplicate, a refusal) are not applied again."""
    prepare = run[0].prepare
    if prepare is None:
        return
    prepare(
        [
            op.args
            for op in run
            if op.kind == run[0].kind
            and op.args is not None
            and isinstance(claims[op.id], LedgerEntry)
        ]
    )


def _not_written(op: Operation, exc: Exception) -> Outcome:
    if isinstance(exc, Unavailable):
        return _refused(op, exc)
    return Outcome(op.id, "retry", 503, error=DATABASE_DOWN)


def _apply_one(
    user: User,
    agent: Agent | None,
    op: Operation,
    settled: list[Settled] | None = None,
    claimed: LedgerEntry | None = None,
) -> Outcome:
    """``settled``: a store write's claim is left pending and added there (the caller stores
    its answer after the store's refresh); ``claimed``: its claim, made already."""
    try:
        if op.touches_store and op.invalid is None:
            return _apply_with_store(user, agent, op, settled, claimed)
        return _apply_rows(user, agent, op)
    except AtlasError as exc:
        return _refused(op, exc)
    except (OperationalError, InterfaceError) as exc:  # the database went away: nothing kept
        logger.warning("operation %s (%s): database unavailable", op.id, op.kind, exc_info=exc)
        return Outcome(op.id, "retry", 503, error=DATABASE_DOWN)
    except Exception as exc:  # a bug of ours: this one operation is answered, the rest go on
        logger.error("operation %s (%s) failed unexpectedly", op.id, op.kind, exc_info=exc)
        return Outcome(op.id, "rejected", 500, error=INTERNAL)


def _claim(user: User, agent: Agent | None, op: Operation) -> LedgerEntry | Outcome:
    """The operation's claim in the ledger (go ahead), or the answer for an id seen before:
    ``duplicate`` (its first result), or raises: 409 another agent's, 422 another payload,
    503 still being applied. A record past its retention no longer counts: the id is new."""
    claim = _ledger_claim(user, agent, op)
    try:
        claimed = ledger_claim(
            scope=claim.scope,
            key=claim.key,
            request=claim.request,
            request_hash=claim.request_hash,
            seed=claim.seed,
            ttl=claim.ttl,
            tenant_id=claim.tenant_id,
            user_id=claim.user_id,
            owner=claim.owner,
        )
    except KeyOfAnotherOwner:
        raise OperationIdOfAnotherAgent(
            f"Operation id {op.id!r} was used by another agent of this user: give each "
            "operation a new id.",
            operation_id=op.id,
        ) from None
    except KeyReused as exc:
        raise OperationIdReused(
            f"Operation id {op.id!r} was used for another operation (kind {exc.first_request}).",
            operation_id=op.id,
        ) from None
    except KeyInProgress:
        raise Unavailable(
            "This operation is still being applied; retry it.", code="in_progress"
        ) from None
    if isinstance(claimed, Replay):
        return _replayed(op, claimed)
    return claimed


def _ledger_claim(user: User, agent: Agent | None, op: Operation) -> Claim:
    return Claim(
        scope=ledger_scope(user),
        key=op.id,
        request=op.kind,
        request_hash=op.request_hash,
        seed=f"op:{user.tenant_id}:{user.pk}:{op.id}:{op.request_hash}",
        ttl=timedelta(days=settings.ATLAS_OPERATION_TTL_DAYS),
        tenant_id=user.tenant_id,
        user_id=user.pk,
        owner=ledger_owner(agent),
    )


def _replayed(op: Operation, stored: Replay) -> Outcome:
    """A duplicate's answer: the first result; a result that quoted a memory forgotten since
    was redacted (``ledger_forget``): its 410, never the text."""
    if stored.status_code < 300:
        return Outcome(op.id, "duplicate", stored.status_code, result=stored.body)
    error = dict(stored.body["error"]) if isinstance(stored.body, dict) else {}
    error.pop("request_id", None)
    return Outcome(op.id, "rejected", stored.status_code, error=error)


def _apply_rows(user: User, agent: Agent | None, op: Operation) -> Outcome:
    """Claim and work in one transaction (an invalid operation too: it is answered as a
    duplicate if its id was applied before, else rejected, and its claim goes with the
    transaction). The services keep their own changes in their own (nested) atomic blocks, so
    a refusal leaves what it records on purpose (a refused task transition) and nothing else;
    the claim is then dropped."""
    with transaction.atomic():
        claimed = _claim(user, agent, op)
        if isinstance(claimed, Outcome):
            return claimed
        try:
            if op.invalid is not None:
                raise op.invalid
            result = op.run()
        except AtlasError as exc:
            ledger_release(entry=claimed)
            return _refused(op, exc)
        ledger_complete(entry=claimed, status_code=op.status_code, body=result)
    return Outcome(op.id, "applied", op.status_code, result=result)


def _apply_with_store(
    user: User,
    agent: Agent | None,
    op: Operation,
    settled: list[Settled] | None = None,
    claim: LedgerEntry | None = None,
) -> Outcome:
    claimed = claim if claim is not None else _claim(user, agent, op)
    if isinstance(claimed, Outcome):
        return claimed
    try:
        with replayable(claimed.seed):
            result = op.run()
    except BaseException as exc:
        # Whatever the store holds now, a retry runs under the same memory ids and finds it.
        ledger_release(entry=claimed)
        if isinstance(exc, AtlasError):
            return _refused(op, exc)
        raise
    outcome = Outcome(op.id, "applied", op.status_code, result=result)
    if settled is not None:
        settled.append((claimed, outcome))
    else:
        ledger_complete(entry=claimed, status_code=op.status_code, body=result)
    return outcome
