"""The exactly-once ledger: one set of rules behind every key a caller names for a write, the
REST ``Idempotency-Key`` (``atlas_platform.idempotency``) and the agents' operation ids
(``Operation-Id`` and ``POST .../operations``: ``agents.services.operations``).

A caller claims ``(scope, key)`` before the write runs, then records the outcome:

- ``ledger_claim`` makes a new entry (go ahead), or answers from the entry the key has:
  its stored answer (``Replay``); ``KeyOfAnotherOwner`` (the scope's key was claimed by
  another owner: an agent's id is answered to that agent only); ``KeyReused`` (another request
  under the key); ``KeyInProgress`` (the first attempt holds its lease, with how long is
  left). A claim whose lease ended without an outcome (its process died, or its outcome is
  unknown) is taken over: the entry is returned to the new attempt, whose write runs under the
  entry's ``seed`` (``memory.services.intents.replayable``), so its memory ids are the first
  attempt's and it finds what that one stored instead of writing it twice. An entry past its
  ``expires_at`` no longer counts: the key is new again. The unique constraint decides races.
- ``ledger_complete`` stores the answer; ``ledger_release`` forgets a claim whose write did
  nothing (refused), so the key may carry a corrected request; ``ledger_unknown`` ends the
  lease of a claim whose outcome is unknown (a 5xx), so a retry takes it over at once.

Each caller maps the refusals to its header's errors (``memory.errors``, ``agents.services.
operations``). The ledger imports no app: its entries name their scope, owner, tenant and user
by plain ids (``LedgerEntry``).

Entries may hold memory text (a stored answer): ``ledger_purge`` drops expired ones (beat,
hourly), ``ledger_user_purge`` a user's (every erasure), and ``ledger_forget`` redacts the
answers that quote a forgotten memory (a replay then answers 410, and the key still blocks a
re-run).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from atlas_platform.api import error_body
from atlas_platform.models import LedgerEntry

FORGOTTEN = 410
FORGOTTEN_MESSAGE = (
    "The response to this request quoted a memory that was since forgotten; it is not kept. "
    "The request is not run again."
)


@dataclass(frozen=True)
class Replay:
    """The stored answer of a key's first request (what a retry gets back)."""

    status_code: int
    body: Any


class LedgerRefusal(Exception):
    """A claim the ledger refuses; each caller answers it with its own error."""


class KeyReused(LedgerRefusal):
    """The key was first used for another request (``first_request`` names it)."""

    def __init__(self, first_request: str) -> None:
        super().__init__(first_request)
        self.first_request = first_request


class KeyInProgress(LedgerRefusal):
    """The key's first request still holds its lease (``retry_after`` seconds left)."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(retry_after)
        self.retry_after = retry_after


class KeyOfAnotherOwner(LedgerRefusal):
    """The key was claimed by another owner of the scope (another agent of the user)."""


class Subject(Protocol):
    """Whose entries: a user of a tenant (``tenants.User``)."""

    @property
    def pk(self) -> Any: ...
    @property
    def tenant_id(self) -> Any: ...
    @property
    def external_id(self) -> str: ...


def _lease() -> datetime:
    return timezone.now() + timedelta(seconds=settings.ATLAS_WRITE_LEASE_S)


def ledger_claim(
    *,
    scope: str,
    key: str,
    request: str,
    request_hash: str,
    seed: str,
    ttl: timedelta,
    tenant_id: int,
    user_id: int | None,
    owner: str = "",
) -> LedgerEntry | Replay:
    """A new entry for ``key`` in ``scope`` (go ahead, or go again: a claim taken over keeps
    its ``seed``), or the stored answer (replay it). ``request``: what the key names (a request
    line, an operation's kind); ``owner``: who within the scope gets its answer ("" anyone).
    Raises a ``LedgerRefusal``. Runs inside a caller's transaction too (a savepoint)."""
    for _ in range(3):  # more passes after removing an expired entry or losing a takeover
        moment = timezone.now()
        try:
            with transaction.atomic():
                return LedgerEntry.objects.create(
                    scope=scope,
                    key=key,
                    owner=owner,
                    tenant_pk=tenant_id,
                    user_pk=user_id,
                    request=request,
                    request_hash=request_hash,
                    seed=seed,
                    created_at=moment,
                    lease_until=_lease(),
                    expires_at=moment + ttl,
                )
        except IntegrityError:
            existing = LedgerEntry.objects.filter(scope=scope, key=key).first()
        if existing is None:  # released in the meantime
            continue
        if existing.expires_at <= moment:
            LedgerEntry.objects.filter(pk=existing.pk, expires_at=existing.expires_at).delete()
            continue
        answer = _answer(existing, owner=owner, request=request, request_hash=request_hash)
        if answer is not None:
            return answer
        # The first attempt's lease ended without an outcome: take it over.
        taken = LedgerEntry.objects.filter(
            pk=existing.pk, status_code=None, lease_until=existing.lease_until
        ).update(lease_until=_lease())
        if taken:
            existing.refresh_from_db()
            return existing
    raise KeyInProgress(settings.ATLAS_WRITE_LEASE_S)


@dataclass(frozen=True)
class Claim:
    """``ledger_claim``'s arguments, for ``ledger_claim_fresh``."""

    scope: str
    key: str
    request: str
    request_hash: str
    seed: str
    ttl: timedelta
    tenant_id: int
    user_id: int | None
    owner: str = ""


def ledger_claim_fresh(claims: Sequence[Claim]) -> dict[str, LedgerEntry]:
    """New entries, in one INSERT, for the claims (of one scope, each key once) whose key no
    entry holds yet, by key. A key held already (answered, in progress, expired) gets none here
    and nothing changes for it: ``ledger_claim`` it, which replays, refuses or takes over. Runs
    inside the caller's transaction, as ``ledger_claim``."""
    if not claims:
        return {}
    if len({c.scope for c in claims}) > 1 or len({c.key for c in claims}) < len(claims):
        raise ValueError("ledger_claim_fresh takes claims of one scope, each key once.")
    moment, lease = timezone.now(), _lease()
    entries = [
        LedgerEntry(
            scope=c.scope,
            key=c.key,
            owner=c.owner,
            tenant_pk=c.tenant_id,
            user_pk=c.user_id,
            request=c.request,
            request_hash=c.request_hash,
            seed=c.seed,
            created_at=moment,
            lease_until=lease,
            expires_at=moment + c.ttl,
        )
        for c in claims
    ]
    connection = transaction.get_connection()
    fields = [f for f in LedgerEntry._meta.concrete_fields if not f.primary_key]
    quote = connection.ops.quote_name
    row = "(" + ", ".join(["%s"] * len(fields)) + ")"
    sql = (
        f"INSERT INTO {quote(LedgerEntry._meta.db_table)}"  # noqa: S608 - the model's own names
        f" ({', '.join(quote(f.column) for f in fields)}) VALUES {', '.join([row] * len(entries))}"
        f" ON CONFLICT ({quote('scope')}, {quote('key')}) DO NOTHING"
        f" RETURNING {quote('id')}, {quote('scope')}, {quote('key')}"
    )
    values = [
        field.get_db_prep_save(getattr(entry, field.attname), connection)
        for entry in entries
        for field in fields
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, values)
        made = {(scope, key): pk for pk, scope, key in cursor.fetchall()}
    fresh: dict[str, LedgerEntry] = {}
    for entry in entries:
        pk = made.get((entry.scope, entry.key))
        if pk is not None:
            entry.pk = pk
            entry._state.adding, entry._state.db = False, connection.alias
            fresh[entry.key] = entry
    return fresh


def _answer(entry: LedgerEntry, *, owner: str, request: str, request_hash: str) -> Replay | None:
    """The stored answer; None when the first attempt's lease is over (take it over)."""
    if entry.owner != owner:
        raise KeyOfAnotherOwner(entry.key)
    if (entry.request, entry.request_hash) != (request, request_hash):
        raise KeyReused(entry.request)
    if entry.status_code is not None:
        return Replay(status_code=entry.status_code, body=entry.response)
    left = (entry.lease_until - timezone.now()).total_seconds() if entry.lease_until else 0
    if left <= 0:
        return None
    raise KeyInProgress(max(1, math.ceil(left)))


def ledger_complete(*, entry: LedgerEntry, status_code: int, body: Any) -> None:
    """Store the answer the first request got (a retry gets it back)."""
    entry.status_code = status_code
    entry.response = body
    entry.lease_until = None
    entry.save(update_fields=["status_code", "response", "lease_until"])


def ledger_complete_many(*, answers: list[tuple[LedgerEntry, int, Any]]) -> None:
    """``ledger_complete`` for many entries (each with its status and body), in one
    transaction."""
    if not answers:
        return
    for entry, status_code, body in answers:
        entry.status_code, entry.response, entry.lease_until = status_code, body, None
    connection = transaction.get_connection()
    if connection.vendor != "postgresql":
        with transaction.atomic():
            LedgerEntry.objects.bulk_update(
                [entry for entry, _, _ in answers], ["status_code", "response", "lease_until"]
            )
        return
    # One UPDATE ... FROM (VALUES ...): bulk_update's CASE WHEN per row and field cost ~3 ms
    # of CPU per entry building its expressions (a batch of 100 writes: 0.3 s).
    response = LedgerEntry._meta.get_field("response")
    values: list[Any] = []
    for entry, status_code, body in answers:
        values += [entry.pk, status_code, response.get_db_prep_save(body, connection)]
    rows = ", ".join(["(%s, %s, %s)"] * len(answers))
    table = connection.ops.quote_name(LedgerEntry._meta.db_table)
    sql = (
        f"UPDATE {table} SET status_code = v.column2::smallint, response = v.column3::jsonb,"  # noqa: S608 - the model's own names
        f" lease_until = NULL FROM (VALUES {rows}) AS v WHERE {table}.id = v.column1"
    )
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, values)


def ledger_release_many(*, entries: list[LedgerEntry]) -> None:
    """``ledger_release`` for many claims at once."""
    LedgerEntry.objects.filter(pk__in=[entry.pk for entry in entries]).delete()


def ledger_release(*, entry: LedgerEntry) -> None:
    """Forget a claim whose request wrote nothing (refused), so the key may carry a corrected
    request."""
    LedgerEntry.objects.filter(pk=entry.pk).delete()


def ledger_unknown(*, entry: LedgerEntry) -> None:
    """The request failed with an unknown outcome (a 5xx): the write may be in the store. The
    claim stays with its lease ended, so the retry takes it over at once and runs under the
    same seed: it finds what this attempt stored instead of writing it again."""
    LedgerEntry.objects.filter(pk=entry.pk, status_code=None).update(lease_until=timezone.now())


def ledger_unknown_many(*, entries: list[LedgerEntry]) -> None:
    """``ledger_unknown`` for many claims at once."""
    LedgerEntry.objects.filter(pk__in=[e.pk for e in entries], status_code=None).update(
        lease_until=timezone.now()
    )


def ledger_answers(*, scope: str, owner: str, keys: set[str]) -> dict[str, Any]:
    """The stored successful answers of these keys of ``owner`` in ``scope``, by key (what a
    later operation's ``$ref`` reads): never another owner's."""
    if not keys:
        return {}
    rows = LedgerEntry.objects.filter(
        scope=scope, owner=owner, key__in=keys, status_code__lt=300
    ).values_list("key", "response")
    return dict(rows)


def ledger_purge() -> int:
    """Delete the entries past their ``expires_at``; returns how many went (beat, hourly)."""
    deleted, _ = LedgerEntry.objects.filter(expires_at__lte=timezone.now()).delete()
    return deleted


def entries_of(user: Subject) -> Q:
    """The entries of requests for ``user``: the user's own (their tokens', their agents'),
    and tenant-wide callers' requests on the user's paths."""
    return Q(user_pk=user.pk) | Q(
        tenant_pk=user.tenant_id,
        user_pk__isnull=True,
        request__contains=f"/users/{user.external_id}/",
    )


def ledger_user_purge(*, user: Subject) -> int:
    """Delete every entry of ``user`` (their stored answers may quote memory text: every
    erasure does this, whatever its scope); returns how many went."""
    deleted, _ = LedgerEntry.objects.filter(entries_of(user)).delete()
    return deleted


def ledger_forget(*, user: Subject, memory_id: str) -> int:
    """Redact the user's stored answers that hold ``memory_id`` (the write that made it, a turn
    or recall that quoted it): a replay answers 410 without the text. The entry stays, so the
    key still replays (the forgotten write is never run again by a retry); returns how many
    were redacted."""
    holding = (
        LedgerEntry.objects.filter(entries_of(user), status_code__isnull=False)
        .annotate(body_text=Cast("response", TextField()))
        .filter(body_text__contains=memory_id)
    )
    gone = error_body("forgotten", FORGOTTEN_MESSAGE)
    gone["error"]["request_id"] = None  # the request it answered is long over
    return holding.update(status_code=FORGOTTEN, response=gone)
