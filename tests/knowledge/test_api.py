"""The knowledge REST API: upsert (single, with Operation-Id, and in the operations batch),
entity reads, graph queries, reconcile. (Refusals of another user's or tenant's user, project
and object ids: the generated probes of every route, tests/atlas_server/test_refusals.py.)"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agents.services.projects import project_register
from knowledge.models import Entity, Revision
from tenants.models import AuditEvent
from tests.agents.conftest import bound_token, error_code, register, user_token
from tests.atlas_server.conftest import Api
from tests.knowledge.conftest import fm

pytestmark = [pytest.mark.django_db, pytest.mark.services]
REMOTE = "git@github.com:acme/app.git"
K = "{key}"

UPSERT = ("POST", "users/{user}/entities", {"project_key": K, "path": "a.md", "content": "x"})


def call(api: Api, endpoint: Any, token: str | None, user: str = "alice", key: str = "0" * 64):
    method, path, body = endpoint
    body = json.loads(json.dumps(body).replace(K, key)) if body is not None else None
    return api.call(method, path.format(user=user, key=key), body, token=token)


@pytest.fixture
def app(alice):
    return project_register(user=alice, remote=REMOTE).project


@pytest.fixture
def bound(alice):
    return bound_token(register(alice))


def upsert(api, token, project, path, content, **extra):
    body = {"project_key": project.key, "path": path, "content": content, **extra}
    return api.post("users/alice/entities", body, token=token)


def test_upserting_needs_a_token_bound_to_an_agent(api, alice, app):
    response = call(api, UPSERT, user_token(alice), key=app.key)
    assert response.status_code == 403 and error_code(response) == "token_not_bound_to_agent"


def test_an_upsert_then_reads_of_the_entity_its_history_and_its_edges(api, store, app, bound):
    content = fm(id="plan-x", status="blocked", blocked_by=["task-a"], body="# Plan\n\nBody.\n")
    created = upsert(api, bound, app, "docs/plan.md", content, machine_key="laptop")
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["outcome"] == "created" and body["entity"]["version"] == 1
    assert body["entity"]["indexed"] is True and body["revision"]["kind"] == "created"
    got = api.get(f"users/alice/entities/plan-x?project={app.key}", token=bound).json()
    assert got["body"] == "# Plan\n\nBody.\n" and got["front_matter"]["blocked_by"] == ["task-a"]
    assert got["edges"] == [
        {
            "label": "blocked_by",
            "direction": "out",
            "key": "task-a",
            "title": None,
            "resolved": False,
        }
    ]
    again = upsert(api, bound, app, "docs/plan.md", content.replace("Body", "More"), base_version=1)
    assert again.status_code == 200 and again.json()["outcome"] == "updated"
    history = api.get(f"users/alice/entities/plan-x/revisions?project={app.key}", token=bound)
    assert [r["kind"] for r in history.json()["results"]] == ["created", "updated"]
    assert history.json()["results"][0]["machine"] == "laptop"
    assert AuditEvent.objects.filter(action="entity.update").count() == 1
    audit = AuditEvent.objects.get(action="entity.create")
    assert "Body" not in json.dumps(audit.metadata)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"surprise": 1}, "surprise"),
        ({"path": "../../etc/passwd.md"}, None),
        ({"content": 5}, "content"),
        ({"base_version": 0}, "base_version"),
        ({"content_hash": "0" * 64}, None),
        ({"content": "---\nblocked_by: {a: 1}\n---\n"}, None),
    ],
)
def test_bad_upserts_are_400_and_write_nothing(api, store, app, bound, change, field):
    body = {"project_key": app.key, "path": "a.md", "content": "x", **change}
    response = api.post("users/alice/entities", body, token=bound)
    assert response.status_code == 400, response.content
    if field:
        assert field in response.json()["error"]["details"]
    assert not Entity.objects.exists() and not Revision.objects.exists()


def test_an_operation_id_applies_an_upsert_once(api, store, app, bound):
    headers = {"Operation-Id": "op-1"}
    first = api.post(
        "users/alice/entities",
        {"project_key": app.key, "path": "a.md", "content": "# A\n"},
        token=bound,
        headers=headers,
    )
    replay = api.post(
        "users/alice/entities",
        {"project_key": app.key, "path": "a.md", "content": "# A\n"},
        token=bound,
        headers=headers,
    )
    # Through the ledger the status is the operation's (200); the outcome says "created".
    assert first.status_code == 200 and replay.status_code == 200
    assert first.json()["outcome"] == "created"
    assert replay.headers.get("Operation-Replayed") == "true"
    assert replay.json() == first.json()
    other = api.post(
        "users/alice/entities",
        {"project_key": app.key, "path": "a.md", "content": "# B\n"},
        token=bound,
        headers=headers,
    )
    assert other.status_code == 422 and error_code(other) == "operation_id_reused"
    assert Revision.objects.count() == 1


def test_entity_upserts_replay_through_the_operations_batch(api, store, app, bound):
    ops = [
        {
            "id": "e-1",
            "op": "entity.upsert",
            "args": {"project_key": app.key, "path": "a.md", "content": "# A\n"},
        },
        {
            "id": "e-2",
            "op": "entity.upsert",
            "args": {
                "project_key": app.key,
                "path": "a.md",
                "content": "# A2\n",
                "base_version": 1,
            },
        },
        {
            "id": "e-3",
            "op": "entity.upsert",
            "args": {
                "project_key": app.key,
                "path": "a.md",
                "content": "# A3\n",
                "base_version": 1,
            },
        },
        {
            "id": "e-4",
            "op": "entity.upsert",
            "args": {"project_key": app.key, "path": "x.txt", "content": ""},
        },
        {"id": "e-5", "op": "entity.upsert", "args": {"project_key": app.key, "oops": 1}},
    ]
    first = api.post("users/alice/operations", {"operations": ops}, token=bound).json()["results"]
    assert [r["status"] for r in first] == ["applied", "applied", "applied", "rejected", "rejected"]
    assert [r["result"]["outcome"] for r in first[:3]] == ["created", "updated", "conflict"]
    again = api.post("users/alice/operations", {"operations": ops[:3]}, token=bound).json()
    assert [r["status"] for r in again["results"]] == ["duplicate"] * 3
    assert list(Revision.objects.order_by("number").values_list("kind", flat=True)) == [
        "created",
        "updated",
        "conflict",
    ]


# What the red team sent: each answered 500 before front matter was checked value by value.
HOSTILE = {
    "deep": "x: " + "[" * 8000 + "]" * 8000,
    "inf": "x: .inf",
    "minus-inf": "x: -.inf",
    "nan": "x: .nan",
    "huge-int": "x: " + "9" * 5000,
    "nul": 'x: "\\0"',
    "surrogate": 'x: "\\ud800"',
}


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_front_matter_is_a_400_naming_the_field(api, store, app, bound, name):
    content = f"---\n{HOSTILE[name]}\n---\nBody.\n"
    response = upsert(api, bound, app, "a.md", content)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "bad_front_matter" and "'x'" in error["message"]
    assert error["details"]["field"] == "front_matter.x"
    assert not Entity.objects.exists() and not Revision.objects.exists()


def test_a_control_character_in_the_front_matter_is_a_400(api, store, app, bound):
    response = upsert(api, bound, app, "a.md", "---\ntitle: a\x01b\n---\nBody.\n")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "bad_front_matter" and error["details"]["field"] == "front_matter"
    assert not Entity.objects.exists() and not Revision.objects.exists()


def test_a_date_that_is_no_date_is_kept_as_written(api, store, app, bound):
    response = upsert(api, bound, app, "a.md", "---\nid: plan-x\ndue: 0000-00-00\n---\nBody.\n")
    assert response.status_code == 201, response.content
    got = api.get(f"users/alice/entities/plan-x?project={app.key}", token=bound).json()
    assert got["front_matter"] == {"id": "plan-x", "due": "0000-00-00"}


def test_a_batch_with_hostile_notes_applies_the_others_and_answers_each(api, store, app, bound):
    def note(op_id, path, content):
        args = {"project_key": app.key, "path": path, "content": content}
        return {"id": op_id, "op": "entity.upsert", "args": args}

    ops = [note("good-1", "a.md", "# A\n")]
    ops += [note(f"bad-{n}", f"{n}.md", f"---\n{y}\n---\n") for n, y in HOSTILE.items()]
    ops += [note("good-2", "b.md", "---\ndue: 0000-00-00\n---\n# B\n")]
    response = api.post("users/alice/operations", {"operations": ops}, token=bound)
    assert response.status_code == 200, response.content
    results = response.json()["results"]
    assert [(r["id"], r["status"], r["status_code"]) for r in results] == [
        ("good-1", "applied", 200),
        *[(f"bad-{n}", "rejected", 400) for n in HOSTILE],
        ("good-2", "applied", 200),
    ]
    assert all(r["error"]["code"] == "bad_front_matter" for r in results[1:-1])
    assert all(r["error"]["details"]["field"] == "front_matter.x" for r in results[1:-1])
    assert sorted(Entity.objects.values_list("path", flat=True)) == ["a.md", "b.md"]


def test_graph_queries_over_rest(api, store, app, bound):
    upsert(
        api,
        bound,
        app,
        "a.md",
        fm(id="a", status="blocked", blocked_by="b", body="Invoice PDF rendering is slow.\n"),
    )
    upsert(api, bound, app, "b.md", fm(id="b", depends_on="a", body="Profile the renderer.\n"))
    search = api.post(
        "users/alice/graph/search", {"query": "invoice pdf", "project": app.key}, token=bound
    )
    assert search.status_code == 200 and search.json()["results"][0]["entity"]["key"] == "a"
    related = api.get(f"users/alice/graph/related?project={app.key}&key=a&depth=2", token=bound)
    assert {(n["key"], n["label"]) for n in related.json()["nodes"]} == {("b", "blocked_by")}
    blockers = api.get(f"users/alice/graph/blockers?project={app.key}&stale_days=0", token=bound)
    # a is blocked (status and edge), b depends on a, which is not done.
    assert {r["entity"]["key"] for r in blockers.json()["results"]} == {"a", "b"}
    diff = api.get(
        f"users/alice/graph/diff?project={app.key}&since=2020-01-01T00:00:00Z"
        "&until=2100-01-01T00:00:00Z",
        token=bound,
    )
    assert diff.status_code == 200 and diff.json()["created"] == ["a", "b"]
    brief = api.get(f"users/alice/graph/handoff?project={app.key}", token=bound)
    assert brief.status_code == 200 and "a" in [
        b["key"] for b in brief.json()["sections"]["active_blockers"]
    ]
    text = api.get(f"users/alice/graph/handoff?project={app.key}&output=markdown", token=bound)
    assert text["Content-Type"].startswith("text/markdown")
    assert text.content.decode() == brief.json()["markdown"]
    bad = api.get(f"users/alice/graph/related?project={app.key}&key=a&depth=3", token=bound)
    assert bad.status_code == 400
    unknown = api.get(f"users/alice/graph/blockers?project={app.key}&nope=1", token=bound)
    assert unknown.status_code == 400 and "nope" in unknown.json()["error"]["details"]
    narrate = api.get(f"users/alice/graph/handoff?project={app.key}&narrate=true", token=bound)
    assert narrate.status_code == 409 and error_code(narrate) == "narration_unavailable"


def test_reconcile_over_rest_refuses_then_plans_applies_and_keeps_a_receipt(api, store, app, bound):
    for n in range(3):
        upsert(api, bound, app, f"docs/{n}.md", f"# Doc {n}\n", machine_key="laptop")
    empty = api.post(
        "users/alice/graph/reconcile/plan",
        {"project_key": app.key, "roots": ["docs"], "files": []},
        token=bound,
    )
    assert empty.status_code == 400 and error_code(empty) == "empty_manifest"
    many = api.post(
        "users/alice/graph/reconcile/plan",
        {
            "project_key": app.key,
            "roots": ["docs"],
            "files": [{"path": "docs/0.md"}],
            "machine_key": "laptop",
        },
        token=bound,
    )
    assert many.status_code == 422 and error_code(many) == "too_many_deletions"
    plan = api.post(
        "users/alice/graph/reconcile/plan",
        {
            "project_key": app.key,
            "roots": ["docs"],
            "files": [{"path": "docs/0.md"}, {"path": "docs/1.md"}],
            "machine_key": "laptop",
        },
        token=bound,
    ).json()
    assert [c["path"] for c in plan["candidates"]] == ["docs/2.md"]
    assert plan["candidates"][0]["reason"] == "missing_and_seen" and plan["machine"] == "laptop"
    receipt = api.post(
        "users/alice/graph/reconcile/apply",
        {"plan_id": plan["plan_id"], "manifest_hash": plan["manifest_hash"]},
        token=bound,
    )
    assert receipt.status_code == 200 and receipt.json()["deleted"] == ["note:docs-2"]
    stale = api.post(
        "users/alice/graph/reconcile/apply",
        {"plan_id": plan["plan_id"], "manifest_hash": plan["manifest_hash"]},
        token=bound,
    )
    assert stale.status_code == 409 and error_code(stale) == "stale_plan"
    run = api.get(f"users/alice/graph/reconcile/runs/{plan['plan_id']}", token=bound).json()
    assert run["status"] == "applied" and run["restorable_until"]
    restored = api.post(
        "users/alice/entities/note:docs-2/restore", {"project_key": app.key}, token=bound
    )
    assert restored.status_code == 200 and restored.json()["deleted_at"] is None
