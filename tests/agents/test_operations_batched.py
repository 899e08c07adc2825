"""An operations batch's memory writes written as one batch (``memory.services.write_batch``),
on both backends: one store call for a run, each write still checked, audited and answered on
its own, and a later operation of the batch reads what an earlier one wrote."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from atlas_platform.models import LedgerEntry
from memory.models import WriteIntent
from memory.selectors import memory_counts
from memory.services.common import backend
from memory.services.scoping import user_read_scope
from tenants.models import AuditEvent

pytestmark = pytest.mark.django_db

PATH = "users/alice/operations"


@pytest.fixture(params=["embedded", "es"])
def store(request: pytest.FixtureRequest, settings: Any, tmp_path: Any) -> str:
    if request.param == "embedded":
        settings.ATLAS_MEMORY_BACKEND = "embedded"
        settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")
    else:
        request.getfixturevalue("es_store")
    return str(request.param)


def op(op_id: str, kind: str, **args: Any) -> dict[str, Any]:
    return {"id": op_id, "op": kind, "args": args}


def ref(op_id: str, field: str) -> dict[str, str]:
    return {"$ref": op_id, "field": field}


def batch(api: Any, token: str, *operations: dict[str, Any]) -> list[dict[str, Any]]:
    response = api.post(PATH, {"operations": list(operations)}, token=token)
    assert response.status_code == 200, response.content
    return list(response.json()["results"])


def audits(memory_id: str) -> int:
    return AuditEvent.objects.filter(metadata__memory_id=memory_id).count()


def test_a_run_of_writes_is_one_store_call_each_audited_once(
    api, alice, alice_bound, store, monkeypatch
):
    calls: list[int] = []
    real = type(backend()).create

    def counted(self: Any, docs: list[Any]) -> set[str]:
        calls.append(len(docs))
        return real(self, docs)

    monkeypatch.setattr(type(backend()), "create", counted)
    texts = [f"Run fact {n}: the build cache lives on volume {n}" for n in range(30)]

    results = batch(
        api, alice_bound, *(op(f"w{n}", "memory.write", text=t) for n, t in enumerate(texts))
    )

    assert {r["status"] for r in results} == {"applied"}
    assert calls == [30]  # the run's 30 memories in one store call
    ids = [r["result"]["id"] for r in results]
    assert [audits(i) for i in ids] == [1] * 30
    assert memory_counts(user=alice)["semantic"] == 30
    assert not WriteIntent.objects.filter(state=WriteIntent.State.PENDING).exists()
    assert not LedgerEntry.objects.filter(status_code=None).exists()
    stored = backend().get_many(user_read_scope(alice), ids)
    assert [d.text for d in stored] == texts


def test_a_runs_claims_and_audit_rows_are_one_insert_each(api, alice, alice_bound, store):
    texts = [f"Counted fact {n}: shelf {n} holds the spare cables" for n in range(30)]
    with CaptureQueriesContext(connection) as queries:
        results = batch(
            api, alice_bound, *(op(f"c{n}", "memory.write", text=t) for n, t in enumerate(texts))
        )

    assert {r["status"] for r in results} == {"applied"}
    inserts = [q["sql"].split("(")[0].strip() for q in queries if q["sql"].startswith("INSERT")]
    assert inserts.count('INSERT INTO "atlas_platform_ledgerentry"') == 1
    assert inserts.count('INSERT INTO "tenants_auditevent"') == 1
    savepoints = sum(q["sql"].startswith("SAVEPOINT") for q in queries)
    assert savepoints < 10  # the request's own, none per operation (a claim each had one)
    ids = [r["result"]["id"] for r in results]
    assert [audits(i) for i in ids] == [1] * 30
    assert LedgerEntry.objects.filter(key__startswith="c", status_code=200).count() == 30


def test_a_later_operation_reads_what_an_earlier_one_of_the_batch_wrote(
    api, alice, alice_bound, store
):
    results = batch(
        api,
        alice_bound,
        op("keep", "memory.write", text="The standup is at 9:30"),
        op("drop", "memory.write", text="The retro is on Fridays"),
        op("forget", "memory.forget", memory_id=ref("drop", "id")),
    )

    assert [r["status"] for r in results] == ["applied"] * 3, results[2]["error"]
    kept, dropped = results[0]["result"]["id"], results[1]["result"]["id"]
    found = backend().get_many(user_read_scope(alice), [kept, dropped])
    assert [d.id for d in found] == [kept]
    assert (
        AuditEvent.objects.filter(action="memory.forget", metadata__memory_id=dropped).count() == 1
    )


def test_a_fact_superseding_one_written_earlier_in_the_same_block(alice, store):
    """Supersession inside one batch: the second fact reads the first (held by the block),
    marks it, and each keeps its one audit row."""
    from memory.services.writes import memory_write, memory_writes_together

    texts = ["The office is in Leeds", "The office moved to York", "Parking is free"]
    with memory_writes_together(texts):
        old = memory_write(user=alice, text=texts[0], memory_type="semantic")
        new = memory_write(user=alice, text=texts[1], memory_type="semantic", supersedes=[old.id])
        other = memory_write(user=alice, text=texts[2], memory_type="semantic")

    stored = {
        d.id: d for d in backend().get_many(user_read_scope(alice), [old.id, new.id, other.id])
    }
    assert stored[old.id].superseded_by == new.id and stored[new.id].supersedes == [old.id]
    assert stored[other.id].superseded_by is None
    assert [audits(i) for i in (old.id, new.id, other.id)] == [1, 1, 1]
    assert AuditEvent.objects.get(metadata__memory_id=new.id).action == "memory.supersede"


def test_a_bad_operation_in_a_run_is_rejected_alone_and_nothing_of_it_is_written(
    api, alice, alice_bound, store
):
    results = batch(
        api,
        alice_bound,
        op("a", "memory.write", text="Deploys need two approvals"),
        op("b", "memory.write", text="Ship it", project_key="0" * 64),
        op("c", "memory.write", text="Hotfixes need one approval"),
    )

    assert [(r["status"], r["status_code"]) for r in results] == [
        ("applied", 200),
        ("rejected", 404),
        ("applied", 200),
    ]
    assert results[1]["error"]["code"] == "project_not_found"
    assert memory_counts(user=alice)["semantic"] == 2
    assert AuditEvent.objects.filter(action="memory.write").count() == 2
    assert not LedgerEntry.objects.filter(key="b").exists()  # the id may carry a fixed op
    assert not WriteIntent.objects.filter(state=WriteIntent.State.PENDING).exists()


def test_the_same_id_twice_in_a_run_is_written_once(api, alice, alice_bound, store):
    write = op("w", "memory.write", text="The VPN needs the new certificate")

    results = batch(api, alice_bound, write, op("x", "memory.write", text="Lunch at noon"), write)

    assert [r["status"] for r in results] == ["applied", "applied", "duplicate"]
    assert results[2]["result"] == results[0]["result"]
    assert memory_counts(user=alice)["semantic"] == 2
