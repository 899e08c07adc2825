"""Exactly-once replay of offline work through ``POST /users/{user_id}/operations``."""

from __future__ import annotations

import json
from datetime import timedelta
from unittest import mock

import pytest
from django.db import OperationalError
from django.utils import timezone

from agents.api.operations import KINDS, Kind
from agents.models import Message, Session, Task, TaskTransition
from atlas_platform.ledger import ledger_purge
from atlas_platform.models import LedgerEntry
from memory.selectors import memory_counts
from tests.agents.conftest import bound_token, error_code

pytestmark = pytest.mark.django_db

PATH = "users/alice/operations"


def op(op_id, kind, **args):
    return {"id": op_id, "op": kind, "args": args}


def batch(api, token, *operations):
    response = api.post(PATH, {"operations": list(operations)}, token=token)
    assert response.status_code == 200, response.content
    return response.json()["results"]


def statuses(results):
    return [(r["id"], r["status"], r["status_code"]) for r in results]


def days_later(days):
    return mock.patch(
        "django.utils.timezone.now", return_value=timezone.now() + timedelta(days=days)
    )


def test_one_id_twice_in_a_batch_applies_once_and_answers_the_first_result(api, alice_bound):
    create = op("op-1", "task.create", title="Write the release notes")

    results = batch(api, alice_bound, create, create)

    assert statuses(results) == [("op-1", "applied", 200), ("op-1", "duplicate", 200)]
    assert results[1]["result"] == results[0]["result"]
    assert Task.objects.count() == 1


def test_one_id_in_two_batches_and_again_8_days_later_is_one_resource(api, alice_bound):
    create = op("op-1", "task.create", title="Write the release notes")
    first = batch(api, alice_bound, create)[0]

    second = batch(api, alice_bound, create)[0]
    with days_later(8):
        late = batch(api, alice_bound, create)[0]

    assert first["status"] == "applied"
    assert second["status"] == late["status"] == "duplicate"
    assert second["result"] == late["result"] == first["result"]
    assert Task.objects.count() == 1


def test_the_record_of_an_id_lasts_ATLAS_OPERATION_TTL_DAYS(api, alice_bound, settings):
    settings.ATLAS_OPERATION_TTL_DAYS = 7
    create = op("op-1", "task.create", title="Write the release notes")
    batch(api, alice_bound, create)

    with days_later(8):
        purged = ledger_purge()
        late = batch(api, alice_bound, create)[0]

    assert purged == 1 and late["status"] == "applied"
    assert Task.objects.count() == 2  # past retention the id is new again, as documented


def test_the_same_id_with_another_payload_is_422_and_the_rest_still_applies(api, alice_bound):
    batch(api, alice_bound, op("op-1", "task.create", title="Write the release notes"))

    results = batch(
        api,
        alice_bound,
        op("op-2", "task.create", title="Before"),
        op("op-1", "task.create", title="Something else entirely"),
        op("op-3", "session.start", session_id="sess-1"),
    )

    assert statuses(results) == [
        ("op-2", "applied", 200),
        ("op-1", "rejected", 422),
        ("op-3", "applied", 200),
    ]
    assert results[1]["error"]["code"] == "operation_id_reused"
    assert sorted(Task.objects.values_list("title", flat=True)) == [
        "Before",
        "Write the release notes",
    ]
    assert Session.objects.count() == 1


def test_a_stale_transition_in_a_batch_is_a_conflict_with_the_server_state(api, alice_bound):
    created = batch(api, alice_bound, op("c", "task.create", title="T"))[0]["result"]
    task_id = created["id"]

    results = batch(
        api,
        alice_bound,
        op("t1", "task.transition", task_id=task_id, to_state="in_progress", expected_version=1),
        op("t2", "task.transition", task_id=task_id, to_state="completed", expected_version=1),
        op("t3", "task.transition", task_id=task_id, to_state="completed", expected_version=2),
    )

    assert statuses(results) == [
        ("t1", "applied", 200),
        ("t2", "conflict", 409),
        ("t3", "applied", 200),
    ]
    assert results[1]["error"]["details"]["current"]["version"] == 2
    assert TaskTransition.objects.filter(task_id=task_id, result="stale_version").count() == 1
    assert not LedgerEntry.objects.filter(key="t2").exists()  # not applied


def test_an_invalid_operation_is_rejected_alone(api, alice_bound):
    results = batch(
        api,
        alice_bound,
        op("a", "task.create", title="ok"),
        op("b", "task.create", title="x", colour="red"),
        op("c", "message.send", to_agent="x", to_user="nobody-here", body="hi"),
        op("d", "task.create", title="also ok"),
    )

    assert statuses(results) == [
        ("a", "applied", 200),
        ("b", "rejected", 400),
        ("c", "rejected", 404),
        ("d", "applied", 200),
    ]
    assert "colour" in results[1]["error"]["details"]["fields"]
    assert Task.objects.count() == 2 and Message.objects.count() == 0


@pytest.mark.parametrize(
    ("fault", "status", "code"),
    [
        (
            RuntimeError("a bug the operation's content triggers"),
            ("rejected", 500),
            "internal_error",
        ),
        (RecursionError("maximum recursion depth exceeded"), ("rejected", 500), "internal_error"),
        (OperationalError("the database went away"), ("retry", 503), "database_unavailable"),
    ],
)
def test_an_unexpected_failure_of_one_operation_is_answered_alone(
    api, alice_bound, monkeypatch, caplog, fault, status, code
):
    """A fault injected in one operation's service (a bug the validation missed, a database
    that went away): that operation alone is answered, with nothing of it recorded; the ones
    before and after it apply and keep their answers. Before, the whole batch was a 500."""
    create = KINDS["task.create"]

    def faulty(agent, args):
        if args["title"] == "boom":
            raise fault
        return create.run(agent, args)

    monkeypatch.setitem(KINDS, "task.create", Kind(create.shape, faulty))
    with caplog.at_level("WARNING", logger="agents.services.operations"):
        results = batch(
            api,
            alice_bound,
            op("a", "task.create", title="before"),
            op("b", "task.create", title="boom"),
            op("c", "task.create", title="after"),
        )

    assert statuses(results) == [("a", "applied", 200), ("b", *status), ("c", "applied", 200)]
    assert results[1]["error"]["code"] == code and results[1]["result"] is None
    assert "boom" not in json.dumps(results[1]) and "went away" not in json.dumps(results[1])
    assert sorted(Task.objects.values_list("title", flat=True)) == ["after", "before"]
    assert not LedgerEntry.objects.filter(key="b").exists()
    assert any("operation b" in r.getMessage() for r in caplog.records)
    again = batch(api, alice_bound, op("a", "task.create", title="before"))
    assert statuses(again) == [("a", "duplicate", 200)]


def test_a_malformed_batch_applies_nothing(api, alice_bound, settings):
    settings.ATLAS_OPERATION_BATCH_MAX = 2
    good = op("a", "task.create", title="ok")
    body: object
    for body in (
        {"operations": [good, op("bad id!", "task.create", title="x")]},
        {"operations": [good, op("b", "task.explode")]},
        {"operations": [good, good, good]},
        {"operations": []},
        {"operations": [good], "extra": 1},
        {"operations": "all of them"},
    ):
        response = api.post(PATH, body, token=alice_bound)
        assert response.status_code == 400, body
        assert set(response.json()) == {"error"}
    assert Task.objects.count() == 0 and LedgerEntry.objects.count() == 0


def test_the_cluster_down_during_a_batch_means_retry_then_each_applies_once(
    api, alice, alice_bound, es_store, settings
):
    live = settings.ATLAS_ES_URL
    operations = [
        op("t", "task.create", title="Ship"),
        op("m1", "memory.write", text="We deploy on Fridays", fact_type="world"),
        op("s", "session.start", session_id="sess-1"),
        op("m2", "memory.write", text="The staging cluster is eu-1", session_id="sess-1"),
    ]

    settings.ATLAS_ES_URL = "http://127.0.0.1:9"  # nothing listens there
    down = batch(api, alice_bound, *operations)
    settings.ATLAS_ES_URL = live

    assert statuses(down) == [
        ("t", "applied", 200),
        ("m1", "retry", 503),
        ("s", "applied", 200),
        ("m2", "retry", 503),
    ]
    assert set(LedgerEntry.objects.values_list("key", flat=True)) == {"t", "s"}
    assert sum(memory_counts(user=alice).values()) == 0  # nothing half-written

    replay = batch(api, alice_bound, *operations)
    again = batch(api, alice_bound, *operations)

    assert [r["status"] for r in replay] == ["duplicate", "applied", "duplicate", "applied"]
    assert [r["status"] for r in again] == ["duplicate"] * 4
    assert replay[1]["result"] == again[1]["result"]
    assert memory_counts(user=alice)["semantic"] == 2
    assert Task.objects.count() == 1 and Session.objects.get().writes == 1


def test_a_memory_written_by_an_agent_carries_agent_project_and_session(
    api, alice, alice_bound, es_store
):
    from memory.selectors import memory_get

    project = batch(api, alice_bound, op("p", "project.register", remote="git@h.com:a/b.git"))
    key = project[0]["result"]["key"]
    batch(api, alice_bound, op("s", "session.start", session_id="sess-1", project_key=key))

    note = batch(
        api,
        alice_bound,
        op("m", "memory.write", text="Use ruff", project_key=key, session_id="sess-1"),
    )[0]

    doc = memory_get(user=alice, memory_id=note["result"]["id"])
    assert doc.metadata == {"agent": "claude-code", "project": key, "session": "sess-1"}
    assert "agent:claude-code" in doc.tags and doc.source == "agent"


def test_a_single_write_with_an_operation_id_is_applied_once(api, alice_bound):
    headers = {"Operation-Id": "op-7"}
    body = {"title": "Write the release notes"}

    first = api.post("users/alice/tasks", body, token=alice_bound, headers=headers)
    again = api.post("users/alice/tasks", body, token=alice_bound, headers=headers)
    with days_later(8):
        late = api.post("users/alice/tasks", body, token=alice_bound, headers=headers)
    other = api.post("users/alice/tasks", {"title": "Else"}, token=alice_bound, headers=headers)
    in_batch = batch(api, alice_bound, op("op-7", "task.create", **body))[0]

    assert first.status_code == again.status_code == late.status_code == 201
    assert "Operation-Replayed" not in first and again["Operation-Replayed"] == "true"
    assert again.json() == late.json() == first.json() == in_batch["result"]
    assert other.status_code == 422 and error_code(other) == "operation_id_reused"
    assert in_batch["status"] == "duplicate" and Task.objects.count() == 1


def test_a_single_write_with_an_operation_id_answers_conflicts_and_bad_ids(api, alice_bound):
    task = api.post("users/alice/tasks", {"title": "T"}, token=alice_bound).json()
    path = f"users/alice/tasks/{task['id']}/transitions"
    move = {"to_state": "in_progress", "expected_version": 1}

    applied = api.post(path, move, token=alice_bound, headers={"Operation-Id": "m1"})
    stale = api.post(path, move, token=alice_bound, headers={"Operation-Id": "m2"})
    bad_id = api.post(path, move, token=alice_bound, headers={"Operation-Id": "no spaces"})
    bad_body = api.post(path, {"to_state": "x"}, token=alice_bound, headers={"Operation-Id": "m3"})

    assert applied.status_code == 200 and applied.json()["version"] == 2
    assert stale.status_code == 409 and error_code(stale) == "stale_version"
    assert stale.json()["error"]["details"]["current"]["version"] == 2
    assert bad_id.status_code == 400 and bad_body.status_code == 400
    assert error_code(bad_id) == error_code(bad_body) == "invalid"
    assert set(LedgerEntry.objects.values_list("key", flat=True)) == {"m1"}


def test_another_agent_reusing_an_operation_id_is_refused_and_learns_nothing(
    api, alice_bound, alice_codex
):
    """The ledger answers an id to the agent that applied it only: another agent of the same
    user sending the same id (same payload, or another) gets a 409, never the first result."""
    create = op("op-1", "task.create", title="Rotate the signing key")
    first = batch(api, alice_bound, create)[0]
    codex = bound_token(alice_codex)

    same = batch(api, codex, create)[0]
    other = batch(api, codex, op("op-1", "task.create", title="Something else"))[0]

    assert first["status"] == "applied"
    for refused in (same, other):
        assert refused["status"] == "conflict" and refused["status_code"] == 409
        assert refused["error"]["code"] == "operation_id_of_another_agent"
        assert refused["result"] is None and "Rotate" not in str(refused)
    assert Task.objects.count() == 1
    assert batch(api, alice_bound, create)[0]["status"] == "duplicate"  # its own agent still


def test_a_run_of_writes_is_embedded_once_and_searchable_when_answered(
    api, alice, alice_bound, es_store, monkeypatch
):
    """Consecutive plain writes of a batch: one call to the model for their texts, one refresh
    for all, and each answered applied only once it can be recalled."""
    from memory.services.common import embedder as real
    from memory.services.recall import memory_recall

    calls = []

    def counting():
        model = real()

        class Counted:
            def embed(self, texts):
                calls.append(("embed", len(texts)))
                return model.embed(texts)

            def embed_one(self, text):
                calls.append(("embed_one", 1))
                return model.embed_one(text)

        return Counted()

    monkeypatch.setattr("memory.services.writes.embedder", counting)
    texts = ["The orders table is sharded by year", "Deploys freeze in December"]
    results = batch(
        api,
        alice_bound,
        *(op(f"w{n}", "memory.write", text=text) for n, text in enumerate(texts)),
        op("t", "task.create", title="Shard the invoices too"),
    )

    assert [r["status"] for r in results] == ["applied", "applied", "applied"]
    assert ("embed", 2) in calls and ("embed_one", 1) not in calls
    found = memory_recall(user=alice, query="orders table sharded by year", k=5)
    assert results[0]["result"]["id"] in {hit.doc.id for hit in found.hits}


def test_a_refresh_failing_after_a_run_answers_retry_and_the_replay_writes_each_once(
    api, alice, alice_bound, es_store, monkeypatch
):
    from memory.engine.base import EngineError
    from memory.engine.elasticsearch.refresh import GroupRefresh

    real = GroupRefresh.after_write
    failed: list[list[str]] = []

    def failing_once(self, indices):
        indices = list(indices)
        if indices and not failed:
            failed.append(indices)
            raise EngineError("the refresh failed")
        return real(self, indices)

    monkeypatch.setattr(GroupRefresh, "after_write", failing_once)
    operations = [op(f"w{n}", "memory.write", text=f"fact number {n} of the run") for n in (1, 2)]

    down = batch(api, alice_bound, *operations)
    replay = batch(api, alice_bound, *operations)

    assert failed and statuses(down) == [("w1", "retry", 503), ("w2", "retry", 503)]
    assert {r["status"] for r in replay} <= {"applied", "duplicate"}
    assert memory_counts(user=alice)["semantic"] == 2  # stored once each, never twice
    assert not LedgerEntry.objects.filter(status_code=None).exists()


def test_a_replay_never_returns_a_forgotten_memorys_result(api, alice, alice_bound, es_store):
    """The ledger's one rule for a forget: the stored result that names the memory is redacted,
    so a replay of the operation answers 410 ``forgotten`` and never runs the write again."""
    write = op("m", "memory.write", text="The vault code is 0451")
    [first] = batch(api, alice_bound, write)
    memory_id = first["result"]["id"]

    gone = api.delete(f"users/alice/memories/{memory_id}", token=alice_bound)
    [replay] = batch(api, alice_bound, write)

    assert gone.status_code == 204
    assert (replay["status"], replay["status_code"]) == ("rejected", 410)
    assert replay["error"]["code"] == "forgotten" and replay["result"] is None
    assert memory_id not in json.dumps(replay) and "0451" not in json.dumps(replay)
    assert memory_counts(user=alice)["semantic"] == 0  # not written again
