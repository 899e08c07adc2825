"""atlas_platform.ledger: the claims of a run of new keys in one INSERT, and a key held
already left to ``ledger_claim`` (replayed, refused or taken over), never touched."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from atlas_platform.ledger import (
    Claim,
    KeyInProgress,
    Replay,
    ledger_claim,
    ledger_claim_fresh,
    ledger_complete,
)
from atlas_platform.models import LedgerEntry

pytestmark = pytest.mark.django_db

TTL = timedelta(days=7)


def claim(key: str, scope: str = "user:1") -> Claim:
    return Claim(
        scope=scope,
        key=key,
        request="memory.write",
        request_hash="h-" + key,
        seed="op:" + key,
        ttl=TTL,
        tenant_id=1,
        user_id=1,
        owner="agent:2",
    )


def by_one(c: Claim) -> LedgerEntry | Replay:
    return ledger_claim(
        scope=c.scope,
        key=c.key,
        request=c.request,
        request_hash=c.request_hash,
        seed=c.seed,
        ttl=c.ttl,
        tenant_id=c.tenant_id,
        user_id=c.user_id,
        owner=c.owner,
    )


def test_new_keys_are_claimed_in_one_insert_as_ledger_claim_would():
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        fresh = ledger_claim_fresh([claim(f"op-{n}") for n in range(20)])

    assert len(queries) == 1
    assert sorted(fresh) == sorted(f"op-{n}" for n in range(20))
    stored = {e.key: e for e in LedgerEntry.objects.all()}
    for key, entry in fresh.items():
        row = stored[key]
        assert entry.pk == row.pk and not entry._state.adding
        assert (row.scope, row.owner, row.seed, row.request_hash) == (
            "user:1",
            "agent:2",
            "op:" + key,
            "h-" + key,
        )
        assert row.status_code is None and row.lease_until is not None
        assert row.lease_until > timezone.now()
        assert row.expires_at - row.created_at == TTL
    ledger_complete(entry=fresh["op-3"], status_code=201, body={"id": "m3"})  # a usable entry
    assert LedgerEntry.objects.get(key="op-3").response == {"id": "m3"}


def test_a_key_held_already_is_left_alone_for_ledger_claim():
    answered = by_one(claim("done"))
    assert isinstance(answered, LedgerEntry)
    ledger_complete(entry=answered, status_code=201, body={"id": "m1"})
    running = by_one(claim("running"))
    assert isinstance(running, LedgerEntry)
    expired = by_one(claim("expired"))
    assert isinstance(expired, LedgerEntry)
    LedgerEntry.objects.filter(pk=expired.pk).update(expires_at=timezone.now())
    before = {e.pk: (e.status_code, e.lease_until, e.expires_at) for e in LedgerEntry.objects.all()}

    with transaction.atomic():
        fresh = ledger_claim_fresh([claim(k) for k in ("done", "new", "running", "expired")])

    assert list(fresh) == ["new"]
    after = {e.pk: (e.status_code, e.lease_until, e.expires_at) for e in LedgerEntry.objects.all()}
    assert {pk: after[pk] for pk in before} == before  # nothing it did not make was touched
    assert by_one(claim("done")) == Replay(status_code=201, body={"id": "m1"})
    with pytest.raises(KeyInProgress):
        by_one(claim("running"))
    assert isinstance(by_one(claim("expired")), LedgerEntry)  # ledger_claim renews it


def test_the_same_key_in_another_scope_is_another_claim():
    with transaction.atomic():
        first = ledger_claim_fresh([claim("k", scope="user:1")])
        second = ledger_claim_fresh([claim("k", scope="user:2")])
        again = ledger_claim_fresh([claim("k", scope="user:1")])

    assert first["k"].scope == "user:1" and second["k"].scope == "user:2" and again == {}
    assert ledger_claim_fresh([]) == {}


def test_claims_of_several_scopes_or_a_key_twice_are_refused():
    for claims in ([claim("a", scope="user:1"), claim("b", scope="user:2")], [claim("a")] * 2):
        with pytest.raises(ValueError, match="one scope, each key once"):
            ledger_claim_fresh(claims)
    assert not LedgerEntry.objects.exists()


def test_many_answers_are_stored_in_one_update_each_with_its_own_body():
    from atlas_platform.ledger import ledger_complete_many

    with transaction.atomic():
        fresh = ledger_claim_fresh([claim(f"a{n}") for n in range(4)])
    bodies = [{"id": "m0"}, {"id": "m1", "note": "café ☕"}, [1, 2], {"nested": {"x": None}}]
    answers = [(fresh[f"a{n}"], 200 + n, body) for n, body in enumerate(bodies)]

    with CaptureQueriesContext(connection) as queries:
        ledger_complete_many(answers=answers)

    assert sum(q["sql"].startswith("UPDATE") for q in queries) == 1
    for n, body in enumerate(bodies):
        row = LedgerEntry.objects.get(key=f"a{n}")
        assert (row.status_code, row.response, row.lease_until) == (200 + n, body, None)
        assert by_one(claim(f"a{n}")) == Replay(status_code=200 + n, body=body)
    assert LedgerEntry.objects.get(key="a0").seed == "op:a0"  # nothing else changed
