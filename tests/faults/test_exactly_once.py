"""Exactly-once writes at each fault point, in process, on the real stores (the shared test
services; nothing here kills a process): the fault is injected at Atlas's own boundary to the
store or the database, and a same-key retry must yield exactly one document with exactly one
audit row, answering with the first write's memory.

The faults that need a process killed or frozen (a cluster that applies a write after the
client gave up, a server killed between claim and completion) are in test_live_faults.py,
against dedicated processes."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import OperationalError
from django.utils import timezone

from atlas_platform.models import LedgerEntry
from memory.engine.base import EngineError
from memory.models import WriteIntent
from memory.services.common import backend
from memory.services.scoping import user_read_scope
from memory.services.writes import memory_intents_reconcile, memory_turn_record
from tenants.models import AuditEvent, Tenant, User
from tests.atlas_server.conftest import Api, error_code, user_token


@pytest.fixture(params=["embedded", "es-filter"])
def kind(request: pytest.FixtureRequest, settings: Any, tmp_path: Any, db: None) -> str:
    if request.param == "embedded":
        settings.ATLAS_MEMORY_BACKEND = "embedded"
        settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")
    else:
        request.getfixturevalue("es")
        settings.ATLAS_MEMORY_BACKEND = "elasticsearch"
    return str(request.param)


@pytest.fixture
def carol(kind: str) -> User:
    tenant = Tenant.objects.create(
        slug=f"faults-{kind}", name="Faults", isolation_mode=Tenant.IsolationMode.FILTER
    )
    return User.objects.create(tenant=tenant, external_id="carol")


@pytest.fixture
def api(client: Any) -> Api:
    return Api(client)


def stored(user: User, text: str) -> list[str]:
    docs = backend().scan(user_read_scope(user), memory_types=("semantic", "episodic"))
    return [d.id for d in docs if d.text == text]


def audits(memory_id: str) -> int:
    return AuditEvent.objects.filter(metadata__memory_id=memory_id).count()


def once(monkeypatch: pytest.MonkeyPatch, target: Any, name: str, error: Exception) -> None:
    """Make ``target.name`` raise ``error`` on its first call, then behave."""
    original = getattr(target, name)
    calls = {"n": 0}

    def flaky(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            raise error
        return original(*args, **kwargs)

    monkeypatch.setattr(target, name, flaky)


def write_twice(api: Api, user: User, body: dict[str, Any], path: str = "memories") -> Any:
    token = user_token(user)
    key = {"Idempotency-Key": f"fault-{path}-1"}
    first = api.post(f"users/carol/{path}", body, token=token, headers=key)
    assert first.status_code == 503, first.content
    assert first["Retry-After"] and first.json()["error"]["code"].endswith("unavailable")
    retry = api.post(f"users/carol/{path}", body, token=token, headers=key)
    assert retry.status_code == 201, retry.content
    replay = api.post(f"users/carol/{path}", body, token=token, headers=key)
    assert replay.json() == retry.json() and replay["Idempotent-Replayed"] == "true"
    return retry.json()


@pytest.mark.parametrize("kind", ["es-filter"], indirect=True)  # only a cluster refreshes
def test_the_cluster_accepted_the_write_then_its_refresh_failed(api, carol, kind, monkeypatch):
    # The connection's group refresh holds the refresh it was built with (a connection cached
    # by an earlier test predates any patch of the class), so the fault goes there.
    conn = backend()._conn  # type: ignore[attr-defined]
    once(monkeypatch, conn.refreshes, "_refresh", EngineError("refresh failed"))
    text = "Carol's locker is 31 (refresh fault)"

    answer = write_twice(api, carol, {"text": text, "memory_type": "semantic"})

    assert stored(carol, text) == [answer["id"]]
    assert audits(answer["id"]) == 1


def test_the_database_went_away_before_the_audit_row_committed(api, carol, monkeypatch):
    import memory.services.writes as writes

    once(monkeypatch, writes, "audit_record", OperationalError("server closed the connection"))
    text = "Carol's locker is 32 (database fault)"

    answer = write_twice(api, carol, {"text": text, "memory_type": "semantic"})

    assert stored(carol, text) == [answer["id"]]
    assert audits(answer["id"]) == 1


def test_the_database_and_the_undo_both_failed(api, carol, monkeypatch):
    """The audit row failed and taking the store write back failed too: the document stays
    with a pending intent, and the retry settles it instead of writing a second one."""
    import memory.services.writes as writes

    once(monkeypatch, writes, "audit_record", OperationalError("the database went away"))
    once(monkeypatch, type(backend()), "delete", EngineError("the store went away too"))
    text = "Carol's locker is 33 (double fault)"
    token = user_token(carol)
    key = {"Idempotency-Key": "double-1"}
    body = {"text": text, "memory_type": "semantic"}

    first = api.post("users/carol/memories", body, token=token, headers=key)
    assert first.status_code == 503
    [left] = stored(carol, text)
    assert WriteIntent.objects.get(memory_id=left).state == "pending"
    retry = api.post("users/carol/memories", body, token=token, headers=key)

    assert retry.status_code == 201 and retry.json()["id"] == left
    assert stored(carol, text) == [left] and audits(left) == 1
    assert WriteIntent.objects.get(memory_id=left).state == "audited"


def test_a_turn_whose_recall_failed_after_its_write(api, carol, monkeypatch):
    import memory.services.writes as writes

    once(monkeypatch, writes, "memory_recall", EngineError("recall failed"))
    text = "My train leaves from platform 9 (turn fault)"

    answer = write_twice(api, carol, {"text": text}, path="turns")

    episode = answer["episode"]["id"]
    assert stored(carol, text) == [episode]
    assert audits(episode) == 1


def test_a_claim_whose_process_died_is_taken_over_after_its_lease(
    api, carol, monkeypatch, settings
):
    """The first attempt wrote and audited, then its process died before the response was
    stored: the claim stays in progress for its lease only; then the retry looks at the store
    and answers with the document the first attempt made."""
    import atlas_platform.views as base

    def die(**kwargs: Any) -> None:
        raise SystemExit("killed")  # the process ends here: nothing after it runs

    monkeypatch.setattr(base, "ledger_complete", die)
    token = user_token(carol)
    key = {"Idempotency-Key": "crash-1"}
    text = "Carol's locker is 34 (crash)"
    body = {"text": text, "memory_type": "semantic"}
    with pytest.raises(SystemExit):
        api.post("users/carol/memories", body, token=token, headers=key)
    monkeypatch.undo()
    # A killed process settles nothing: the claim stays as it was, its lease running.
    LedgerEntry.objects.filter(key="crash-1").update(
        lease_until=timezone.now() + timedelta(seconds=30)
    )

    early = api.post("users/carol/memories", body, token=token, headers=key)
    assert early.status_code == 409 and error_code(early) == "idempotency_in_progress"
    assert 1 <= int(early["Retry-After"]) <= 30
    LedgerEntry.objects.filter(key="crash-1").update(lease_until=timezone.now())
    late = api.post("users/carol/memories", body, token=token, headers=key)

    [only] = stored(carol, text)
    assert late.status_code == 201 and late.json()["id"] == only
    assert audits(only) == 1


def test_an_agent_operation_replays_through_the_same_mechanism(carol, monkeypatch, kind):
    import memory.services.writes as writes
    from agents.services.operations import Operation, operations_apply
    from memory.services.intents import derived_id

    once(monkeypatch, writes, "audit_record", OperationalError("the database went away"))
    once(monkeypatch, type(backend()), "delete", EngineError("the store went away too"))
    text = "Decision: ship on Friday (operation fault)"

    def run() -> dict[str, Any]:
        doc = writes.memory_write(user=carol, text=text, memory_type="semantic")
        return {"id": doc.id}

    op = Operation(id="op-1", kind="memory.write", request_hash="h", run=run, touches_store=True)
    # the operation alone is answered retry (503): the client sends it again
    [first] = operations_apply(user=carol, operations=[op])
    [second] = operations_apply(user=carol, operations=[op])
    [third] = operations_apply(user=carol, operations=[op])

    assert (first.status, first.status_code) == ("retry", 503)
    assert first.error is not None and first.error["code"] == "database_unavailable"
    assert (second.status, third.status) == ("applied", "duplicate")
    expected = derived_id(f"op:{carol.tenant_id}:{carol.pk}:op-1:h", 0)
    assert second.result == third.result == {"id": expected}
    assert stored(carol, text) == [expected] and audits(expected) == 1


def test_the_reconciler_takes_back_a_write_nobody_retried(carol, monkeypatch, settings):
    import memory.services.writes as writes

    once(monkeypatch, writes, "audit_record", OperationalError("the database went away"))
    once(monkeypatch, type(backend()), "delete", EngineError("the store went away too"))
    text = "An unacknowledged turn (reconciler)"
    with pytest.raises(OperationalError):
        memory_turn_record(user=carol, text=text)
    [left] = stored(carol, text)

    assert memory_intents_reconcile() == 0  # still within its grace: a retry may come
    WriteIntent.objects.filter(memory_id=left).update(
        updated_at=timezone.now() - timedelta(seconds=settings.ATLAS_INTENT_GRACE_S + 1)
    )
    assert memory_intents_reconcile() == 1

    assert stored(carol, text) == [] and audits(left) == 0
    assert not WriteIntent.objects.filter(memory_id=left).exists()


@pytest.mark.parametrize(
    ("levels", "code"),
    [
        (40, "metadata_too_deep"),  # a body the parser takes; the services refuse the metadata
        (300, "too_deep"),  # past the request parser's own depth limit
    ],
)
def test_metadata_too_deep_is_a_400_that_echoes_nothing(api, carol, levels, code):
    deep: dict[str, Any] = {"leaf": "SECRET-MARKER"}
    for _ in range(levels):
        deep = {"d": deep}
    body = {"text": "deep metadata", "memory_type": "semantic", "metadata": deep}

    response = api.post("users/carol/memories", body, token=user_token(carol))

    assert response.status_code == 400 and error_code(response) == code
    assert b"SECRET-MARKER" not in response.content
