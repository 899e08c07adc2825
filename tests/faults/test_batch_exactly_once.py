"""Exactly-once writes of an operations batch whose memory writes are written as one batch
(``memory.services.write_batch``), at each fault point of the batch's one write: the store
call, the audit rows' transaction, the audit rows and their undo, the stored answers. The
batch is answered ``retry`` and sent again as is; every memory must then be stored once with
one audit row, answered with what was stored. Both backends, in process, on the real stores."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import OperationalError

from agents.services.agents import agent_register
from atlas_platform.models import LedgerEntry
from memory.engine.base import EngineError
from memory.models import WriteIntent
from memory.services.common import backend
from memory.services.scoping import user_read_scope
from tenants.models import AuditEvent, Tenant, User
from tests.faults.test_exactly_once import kind, once  # noqa: F401 - kind: the backends


@pytest.fixture
def carol(kind: str) -> User:  # noqa: F811 - uses the imported fixture
    tenant = Tenant.objects.create(
        slug=f"batch-faults-{kind}", name="Batch faults", isolation_mode=Tenant.IsolationMode.FILTER
    )
    return User.objects.create(tenant=tenant, external_id="carol")


TEXTS = [f"Batch fault fact {n}: rack {n} holds the backups" for n in range(12)]


def send(user: User) -> list[Any]:
    from agents.api.operations import parse_operation
    from agents.services.operations import operations_apply

    agent = agent_register(user=user, slug="batcher").agent
    items = [
        {"id": f"op-{n}", "op": "memory.write", "args": {"text": text}}
        for n, text in enumerate(TEXTS)
    ]
    return operations_apply(
        user=user, agent=agent, operations=[parse_operation(agent, i) for i in items]
    )


def assert_exactly_once(user: User, outcomes: list[Any]) -> None:
    assert [o.status for o in outcomes] == ["applied"] * len(TEXTS), outcomes
    docs = backend().scan(user_read_scope(user), memory_types=("semantic",))
    by_text: dict[str, list[str]] = {}
    for doc in docs:
        by_text.setdefault(doc.text, []).append(doc.id)
    assert sorted(by_text) == sorted(TEXTS)
    assert all(len(ids) == 1 for ids in by_text.values()), by_text
    for outcome in outcomes:
        memory_id = outcome.result["id"]
        assert by_text[TEXTS[int(outcome.id.split("-")[1])]] == [memory_id]
        assert AuditEvent.objects.filter(metadata__memory_id=memory_id).count() == 1
    assert not WriteIntent.objects.filter(state=WriteIntent.State.PENDING).exists()
    assert not LedgerEntry.objects.filter(status_code=None).exists()


def retried_then_once(user: User) -> None:
    first = send(user)
    assert {o.status for o in first} == {"retry"} and {o.status_code for o in first} == {503}
    assert not LedgerEntry.objects.filter(key__startswith="op-").exists()  # claims released
    assert_exactly_once(user, send(user))
    assert [o.status for o in send(user)] == ["duplicate"] * len(TEXTS)


def test_the_store_call_of_the_batch_failed(carol, monkeypatch):
    once(monkeypatch, type(backend()), "create", EngineError("the store went away"))

    retried_then_once(carol)


def test_the_database_went_away_before_the_batchs_audit_rows_committed(carol, monkeypatch):
    import memory.services.write_batch as write_batch

    once(monkeypatch, write_batch, "audit_record_many", OperationalError("connection closed"))

    retried_then_once(carol)


def test_the_audit_rows_and_the_undo_of_one_write_both_failed(carol, monkeypatch):
    """The batch's audit rows failed and one memory could not be taken back: it stays in the
    store with its pending intent, and the retry settles it (one audit row) instead of
    writing it again; the others are written afresh."""
    import memory.services.write_batch as write_batch

    once(monkeypatch, write_batch, "audit_record_many", OperationalError("the database went away"))
    once(monkeypatch, type(backend()), "delete", EngineError("the store went away too"))

    first = send(carol)

    assert {o.status for o in first} == {"retry"}
    assert WriteIntent.objects.filter(state=WriteIntent.State.PENDING).count() == 1
    assert_exactly_once(carol, send(carol))


def test_the_answers_of_a_written_batch_were_not_stored(carol, monkeypatch):
    """Written and audited, then the database failed storing the answers: retry; the retry
    finds every memory (its intent audited) and writes nothing twice."""
    import agents.services.operations as operations

    once(monkeypatch, operations, "ledger_complete_many", OperationalError("connection lost"))

    first = send(carol)

    assert {o.status for o in first} == {"retry"}
    assert_exactly_once(carol, send(carol))


def test_a_process_that_died_mid_batch_is_taken_over_after_its_lease(carol, monkeypatch):
    """The batch was written and audited, then its process died before it stored the
    answers: its claims stay pending until their lease ends; then a retry takes them over
    and answers with what the dead one wrote."""
    from django.utils import timezone

    import agents.services.operations as operations

    def die(**kwargs: Any) -> None:
        raise SystemExit("killed")

    monkeypatch.setattr(operations, "ledger_complete_many", die)
    with pytest.raises(SystemExit):
        send(carol)
    monkeypatch.undo()
    assert LedgerEntry.objects.filter(status_code=None).count() == len(TEXTS)
    LedgerEntry.objects.update(lease_until=timezone.now())

    assert_exactly_once(carol, send(carol))
