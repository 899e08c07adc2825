"""The user export (``GET /api/v1/users/{user_id}/export``, the right of access): every app's
section (``tenants.exports``) for a user with data in every app, nobody else's rows, the auth
rules of every user endpoint, bounded batches, and what a failure does before and during the
stream."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from django.apps import apps
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.models import Project
from agents.services.tasks import task_create
from atlas_platform.config import ChatModelSettings
from consolidation.services.triggers import consolidation_request
from erasure.services import OperatorPrincipal, forget_request_open
from knowledge.models import HandoffNarration
from memory.engine.base import EngineError
from memory.services.common import backend
from memory.services.writes import memory_turn_record, memory_write
from tenants import exports
from tenants.models import PlatformToken, ScopedKey, Tenant, User
from tenants.scoping import scope_for
from tenants.services.tokens import token_issue, token_revoke
from tests.agents.conftest import register
from tests.agents.test_purge import everything
from tests.atlas_server.conftest import error_code, tenant_token, user_token
from tests.knowledge.test_erasure import graph

pytestmark = pytest.mark.usefixtures("store")

# Where each model of the apps above tenants that holds a user's data lands in the export: a
# new model must be added here and get a section (or the export misses it).
SECTION_OF = {
    ("agents", "Agent"): "agents",
    ("agents", "Machine"): "machines",
    ("agents", "Project"): "projects",
    ("agents", "Session"): "agent_sessions",
    ("agents", "Task"): "tasks",
    ("agents", "TaskTransition"): "task_transitions",
    ("agents", "Message"): "agent_messages",
    ("agents", "Presence"): "presence",
    ("agents", "MemoryFile"): "memory_files",
    ("knowledge", "Entity"): "entities",
    ("knowledge", "Revision"): "entity_revisions",
    ("knowledge", "Edge"): "entity_edges",
    ("knowledge", "ReconcileRun"): "reconcile_runs",
    ("knowledge", "HandoffNarration"): "handoff_narrations",
    ("erasure", "ForgetRequest"): "forget_requests",  # and erasure_requests
    # Rows of a request (no user of their own), shown inside forget_requests' entries.
    ("erasure", "ErasureProgress"): "forget_requests",
    ("erasure", "ErasedPage"): "forget_requests",
    ("tenants", "PlatformToken"): "tokens",
    ("tenants", "ScopedKey"): "scoped_keys",
    ("consolidation", "ConsolidationRun"): "consolidation_runs",
    ("consolidation", "ConsolidationState"): "consolidation_state",
    ("consolidation", "PlaybookSuggestion"): "playbook_suggestions",
    ("memory", "SessionCursor"): "session_cursors",
}
# Models of those apps that hold nothing of one user's, with the reason.
NOT_A_USERS = {
    ("memory", "RecallStat"): "tenant-wide recall counts per day",
    ("memory", "WriteIntent"): "a store write in flight (ids and state only)",
}


def exported(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response
    assert response.streaming and response["Content-Type"] == "application/json"
    body = json.loads(b"".join(response.streaming_content))
    assert isinstance(body, dict)
    return body


def fill(user: User, peer: User, admin: Any) -> None:
    """Something of ``user`` in every app (messages exchanged with ``peer``'s agent)."""
    memory_write(user=user, text=f"{user.external_id} keeps bees", memory_type="semantic")
    memory_write(
        user=user,
        text="Feeding bees in winter",
        memory_type="procedural",
        name="winter feeding",
        steps=[{"instruction": "Give fondant"}],
    )
    # A turn whose recall suggests the playbook: pending episodes + a playbook suggestion.
    memory_turn_record(user=user, text="How do I feed the bees in winter?", session_id="s1")
    consolidation_request(user=user, trigger="on_demand")
    everything(user, register(peer, f"peer-of-{user.external_id}"))
    graph(user)
    project = Project.objects.filter(user=user).earliest("pk")
    HandoffNarration.objects.create(
        user=user, project=project, prompt_tokens=120, completion_tokens=30
    )
    token = token_issue(tenant=user.tenant, user=user, name=f"{user.external_id} app").token
    ScopedKey.objects.create(
        user=user, key_id=f"key-{user.external_id}", key_name="k", encrypted_secret="x"
    )
    forget_request_open(
        reason="the subject asked", ticket="DPO-1", user=user, by=token, scope="query", query="bees"
    )
    operator_scope = scope_for(admin.account)
    assert operator_scope is not None
    operator = OperatorPrincipal(admin.account, operator_scope)
    forget_request_open(
        reason="the subject asked", ticket="DPO-1", user=user, by=operator, scope="user"
    )


@pytest.fixture
def carol(acme: Tenant) -> User:
    return User.objects.create(tenant=acme, external_id="carol")


@pytest.fixture
def chat_model_named(settings: Any) -> None:
    """A chat model configured, so a consolidation can be requested (the run is only queued:
    the test's transaction never commits, so nothing publishes or calls it)."""
    settings.ATLAS_CHAT_MODEL = ChatModelSettings(base_url="http://127.0.0.1:9/v1", model="none")


def test_every_app_of_a_user_is_in_their_export_and_nobody_elses(
    api: Any, alice: User, bob: User, carol: User, acme_admin: Any, chat_model_named: None
) -> None:
    fill(alice, carol, acme_admin)
    fill(bob, carol, acme_admin)

    response = api.get("users/alice/export", token=user_token(alice))

    body = exported(response)
    names = [section.name for section in exports.export_sections()]
    assert list(body) == ["user", "exported_at", "about", *names, "counts"]
    assert list(body["about"]) == names and all(body["about"].values())
    for name in names:
        assert body[name], f"section {name} is empty"
        assert body["counts"][name] == len(body[name]), name
    assert body["user"] == {
        "external_id": "alice",
        "display_name": "",
        "status": "active",
        "created_at": body["user"]["created_at"],
        "legal_hold_at": None,
    }
    assert {m["text"] for m in body["memories"]} == {
        "alice keeps bees",
        "Feeding bees in winter",
        "How do I feed the bees in winter?",
    }
    assert body["playbook_suggestions"][0]["session_id"] == "s1"
    assert [(c["agent"], c["session_id"], c["inferred"]) for c in body["session_cursors"]] == [
        ("", "s1", False)
    ]
    assert [(r["scope"], r["status"]) for r in body["forget_requests"]] == [("query", "pending")]
    assert set(body["forget_requests"][0]) >= {"memory_ids", "progress", "receipt"}
    (erasure,) = body["erasure_requests"]  # an operator's request about her: its status only
    assert set(erasure) == {"id", "scope", "status", "created_at", "finished_at"}
    assert {e["key"] for e in body["entities"]} == {"a", "b"}
    assert "Narwhal tusk study.\n" in {e["body"] for e in body["entities"]}
    assert {(e["source"], e["label"], e["target"]) for e in body["entity_edges"]} == {
        ("a", "blocked_by", "b")
    }
    assert body["handoff_narrations"][0]["prompt_tokens"] == 120
    # Messages between her agent and Carol's: both ways, nothing of Bob's exchange with Carol.
    assert {(m["sender_user"], m["recipient_user"]) for m in body["agent_messages"]} == {
        ("alice", "carol"),
        ("carol", "alice"),
    }
    assert [k["key_id"] for k in body["scoped_keys"]] == ["key-alice"]
    assert "alice app" in {t["name"] for t in body["tokens"]}
    assert "encrypted_secret" not in json.dumps(body) and "secret_hash" not in json.dumps(body)
    assert b"bob" not in json.dumps(body).lower().encode()


def test_every_model_that_holds_user_data_has_a_section() -> None:
    names = {section.name for section in exports.export_sections()}
    for app in ("memory", "agents", "knowledge", "erasure", "consolidation"):
        for model in apps.get_app_config(app).get_models():
            if (app, model.__name__) in NOT_A_USERS:
                continue
            section = SECTION_OF.get((app, model.__name__))
            assert section in names, f"{app}.{model.__name__} has no export section"
    for model_name in ("PlatformToken", "ScopedKey"):  # tenants' rows of one user
        assert SECTION_OF[("tenants", model_name)] in names, model_name


@pytest.mark.parametrize(
    "caller", ["alice's user token", "another tenant's token", "revoked tenant token"]
)
def test_a_token_cannot_export_a_user_it_may_not_name(
    api: Any, alice: User, bob: User, globex: Tenant, caller: str
) -> None:
    memory_write(user=bob, text="Bob's private note", memory_type="semantic")
    token = {
        "alice's user token": lambda: user_token(alice),
        "another tenant's token": lambda: tenant_token(globex, allow_export=True),
        "revoked tenant token": lambda: tenant_token(bob.tenant),
    }[caller]()
    if caller == "revoked tenant token":
        token_revoke(token=PlatformToken.objects.get(lookup=token.split("_")[1]))

    response = api.get("users/bob/export", token=token)

    assert response.status_code in (401, 404), response.status_code
    assert not response.streaming and "Bob's private note" not in response.content.decode()
    expected = "token_revoked" if caller == "revoked tenant token" else "user_not_found"
    assert error_code(response) == expected


def test_a_tenant_token_with_the_export_right_exports_any_user_of_its_tenant(
    api: Any, alice: User, bob: User
) -> None:
    memory_write(user=bob, text="Bob's note", memory_type="semantic")

    body = exported(api.get("users/bob/export", token=tenant_token(bob.tenant, allow_export=True)))

    assert [m["text"] for m in body["memories"]] == ["Bob's note"]


@pytest.mark.parametrize(
    "rights",
    [{}, {"allow_catalog": True}, {"allow_provisioning": True}],
    ids=["plain", "catalog", "provisioning"],
)
def test_a_tenant_token_without_the_export_right_is_refused_with_what_to_do(
    api: Any, bob: User, rights: dict[str, bool]
) -> None:
    memory_write(user=bob, text="Bob's private note", memory_type="semantic")

    response = api.get("users/bob/export", token=tenant_token(bob.tenant, **rights))

    assert response.status_code == 403
    assert error_code(response) == "export_not_allowed"
    assert "export right" in response.json()["error"]["message"]
    assert "Bob's private note" not in response.content.decode()


def test_the_export_right_is_never_given_to_a_user_token(alice: User) -> None:
    issued = token_issue(tenant=alice.tenant, user=alice, name="alice app", allow_export=True)

    assert issued.token.allow_export is False
    assert issued.token.rights == ["own user's memories", "own user's export"]


def test_a_section_bigger_than_a_batch_is_read_in_bounded_batches(
    api: Any, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(exports, "EXPORT_BATCH", 3)
    agent = register(alice)
    made = [task_create(user=alice, agent=agent, title=f"task {n}").pk for n in range(7)]

    with CaptureQueriesContext(connection) as queries:
        body = exported(api.get("users/alice/export", token=user_token(alice)))

    assert [t["id"] for t in body["tasks"]] == made
    task_reads = [q["sql"] for q in queries if q["sql"].startswith('SELECT "agents_task"')]
    assert len(task_reads) == 3  # 3 + 3 + 1 rows, never all at once
    assert all("LIMIT 3" in sql for sql in task_reads)


def test_a_store_down_before_the_stream_is_a_plain_503(
    api: Any, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise EngineError("index [atlas-x] refused")

    monkeypatch.setattr(type(backend()), "scan", broken)

    response = api.get("users/alice/export", token=user_token(alice))

    assert response.status_code == 503 and not response.streaming
    assert error_code(response) == "memory_store_unavailable"


def test_a_failure_mid_stream_cuts_the_document_visibly_short(
    api: Any, alice: User, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    agent = register(alice)
    for n in range(2):
        task_create(user=alice, agent=agent, title=f"task {n}")
    section = next(s for s in exports.export_sections() if s.name == "tasks")

    def failing(user: User) -> Any:
        rows = iter(section.rows(user))
        yield next(rows)
        raise RuntimeError("the database went away")

    monkeypatch.setitem(
        exports._SECTIONS, "tasks", exports.ExportSection("tasks", failing, section.shape, "")
    )

    with caplog.at_level("ERROR", logger="tenants.api.export"):
        response = api.get("users/alice/export", token=user_token(alice))
        assert response.status_code == 200  # the response had started
        raw = b"".join(response.streaming_content)

    assert b"task 0" in raw and b"task 1" not in raw
    with pytest.raises(json.JSONDecodeError):
        json.loads(raw)
    assert any("mid-stream" in r.getMessage() for r in caplog.records)


def test_a_lone_surrogate_stored_before_it_was_refused_is_exported_escaped(
    api: Any, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite (the embedded default) took a lone surrogate before input refused them; the
    export then broke mid-stream with a UnicodeEncodeError. It is written as its escape."""
    agent = register(alice)
    task_create(user=alice, agent=agent, title="task 0")
    section = next(s for s in exports.export_sections() if s.name == "tasks")

    def stored_before(user: User) -> Any:
        for task in section.rows(user):
            task.title = "odd \ud800 title"  # as a row stored before the fix reads back
            yield task

    monkeypatch.setitem(
        exports._SECTIONS, "tasks", exports.ExportSection("tasks", stored_before, section.shape, "")
    )

    body = exported(api.get("users/alice/export", token=user_token(alice)))

    assert body["tasks"][0]["title"] == "odd \ud800 title" and body["counts"]["tasks"] == 1


@pytest.mark.django_db(transaction=True)
def test_the_served_app_streams_a_big_export_whole(
    atlas_server: str, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Over a real socket, through the ASGI app that serves production (uvicorn, a2wsgi,
    Django): chunked, never a Content-Length computed from a body held whole, and complete."""
    from tenants.api import export

    monkeypatch.setattr(export, "CHUNK_BYTES", 4096)  # many chunks from a few hundred rows
    made = memory_import_many(alice, 260)  # more than two of memory's internal pages
    token = user_token(alice)

    with httpx2.stream(
        "GET",
        f"{atlas_server}/api/v1/users/alice/export",
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    ) as response:
        assert response.status_code == 200
        assert "content-length" not in response.headers
        assert response.headers["transfer-encoding"] == "chunked"
        pieces = list(response.iter_raw())

    body = json.loads(b"".join(pieces))
    assert [m["id"] for m in body["memories"]] == made and body["counts"]["memories"] == 260
    assert len(pieces) > 1


def memory_import_many(user: User, n: int) -> list[str]:
    from datetime import UTC, datetime, timedelta

    from memory.services.imports import ImportedMemory, memory_import

    start = datetime(2025, 1, 1, tzinfo=UTC)
    memories = [
        ImportedMemory(
            text=f"Imported note number {i}",
            memory_type="semantic",
            timestamp=start + timedelta(hours=i),
        )
        for i in range(n)
    ]
    return [doc.id for doc in memory_import(user=user, memories=memories)]
