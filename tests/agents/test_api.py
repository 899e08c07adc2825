"""The agents REST API end to end: what a coding agent's client calls in a session."""

from __future__ import annotations

import pytest

from agents.models import Presence, Session, Task
from tenants.models import AuditEvent
from tests.agents.conftest import bound_token, error_code, register, user_token

pytestmark = pytest.mark.django_db


def test_an_agent_registers_once(api, alice):
    token = user_token(alice)

    first = api.post("users/alice/agents", {"slug": "codex", "display_name": "Codex"}, token=token)
    again = api.post("users/alice/agents", {"slug": "codex"}, token=token)
    listed = api.get("users/alice/agents", token=token)

    assert (first.status_code, again.status_code) == (201, 200)
    assert [a["slug"] for a in listed.json()["results"]] == ["codex"]


def test_a_session_from_start_to_end(api, alice_bound):
    beat = {"machine_key": "desk-1", "label": "Desk", "os": "linux", "client_version": "0.1"}
    api.post("users/alice/heartbeat", beat, token=alice_bound)
    started = api.post(
        "users/alice/sessions", {"session_id": "s-1", "machine_key": "desk-1"}, token=alice_bound
    )
    restarted = api.post("users/alice/sessions", {"session_id": "s-1"}, token=alice_bound)
    api.post("users/alice/heartbeat", {**beat, "session_id": "s-1"}, token=alice_bound)
    active = api.get("users/alice/presence", token=alice_bound).json()["results"]

    for _ in range(100):
        touched = api.post("users/alice/sessions/s-1/touch", {}, token=alice_bound)
    ended = api.post("users/alice/sessions/s-1/end", {"reason": "user_exit"}, token=alice_bound)
    idle = api.get("users/alice/presence", token=alice_bound).json()["results"]

    assert (started.status_code, restarted.status_code) == (201, 200)
    assert [(p["machine"]["key"], p["status"], p["session_id"]) for p in active] == [
        ("desk-1", "active", "s-1")
    ]
    assert touched.json()["turns"] == 100 and Session.objects.count() == 1
    assert ended.json()["end_reason"] == "user_exit" and ended.json()["ended_at"]
    assert [(p["status"], p["session_id"]) for p in idle] == [("idle", None)]
    listed = api.get("users/alice/sessions?open=true", token=alice_bound).json()["results"]
    assert listed == []


def test_a_task_through_its_states_and_a_stale_move(api, alice_bound):
    created = api.post(
        "users/alice/tasks", {"title": "Fix the flaky test", "tags": ["ci"]}, token=alice_bound
    ).json()
    path = f"users/alice/tasks/{created['id']}/transitions"

    started = api.post(path, {"to_state": "in_progress", "expected_version": 1}, token=alice_bound)
    stale = api.post(path, {"to_state": "completed", "expected_version": 1}, token=alice_bound)
    illegal = api.post(path, {"to_state": "created", "expected_version": 2}, token=alice_bound)
    current = api.get("users/alice/tasks/current", token=alice_bound).json()["results"]
    done = api.post(
        path,
        {"to_state": "completed", "expected_version": 2, "outcome": "Pinned the seed."},
        token=alice_bound,
    )

    assert (created["state"], created["version"], created["agent"]) == ("created", 1, "claude-code")
    assert started.json()["state"] == "in_progress"
    assert stale.status_code == 409 and error_code(stale) == "stale_version"
    assert stale.json()["error"]["details"]["current"]["state"] == "in_progress"
    assert illegal.status_code == 409 and error_code(illegal) == "illegal_transition"
    assert [t["id"] for t in current] == [created["id"]]
    assert (done.json()["state"], done.json()["version"]) == ("completed", 3)
    completed = api.get("users/alice/tasks?state=completed", token=alice_bound).json()
    assert [t["outcome"] for t in completed["results"]] == ["Pinned the seed."]


def test_messages_between_two_users_agents(api, alice_bound, bob_agent, bob_bound):
    sent = api.post(
        "users/alice/messages",
        {"to_user": "bob", "to_agent": "claude-code", "subject": "Review", "body": "PR 12?"},
        token=alice_bound,
    ).json()

    bobs = api.get("users/bob/messages/inbox?unread=true", token=bob_bound).json()["results"]
    alices = api.get("users/alice/messages/inbox", token=alice_bound).json()["results"]
    reply = api.post(
        f"users/bob/messages/{sent['id']}/reply", {"body": "Approved."}, token=bob_bound
    )
    acked = api.post(f"users/bob/messages/{sent['id']}/ack", token=bob_bound)
    unread = api.get("users/bob/messages/inbox?unread=true", token=bob_bound).json()["results"]

    assert [m["id"] for m in bobs] == [sent["id"]] and alices == []
    assert reply.status_code == 201
    assert (reply.json()["thread"], reply.json()["reply_to"]) == (sent["thread"], sent["id"])
    assert acked.json()["acknowledged_at"] and unread == []


def test_projects_register_and_list_with_the_team(api, alice, bob):
    alice_token, bob_token = user_token(alice), user_token(bob)
    body = {"remote": "git@github.com:acme/rocket.git", "team_visible": True}

    created = api.post("users/alice/projects", body, token=alice_token)
    again = api.post(
        "users/alice/projects", {"remote": "https://github.com/acme/rocket"}, token=alice_token
    )
    team = api.get("users/bob/projects?team=true", token=bob_token).json()["results"]
    own = api.get("users/bob/projects", token=bob_token).json()["results"]

    assert (created.status_code, again.status_code) == (201, 200)
    assert again.json()["key"] == created.json()["key"]
    assert [(p["name"], p["owner"]) for p in team] == [("rocket", "alice")] and own == []


def test_the_acting_agent_comes_from_the_token_never_the_body(api, alice, alice_agent):
    register(alice, "codex")
    codex_token = bound_token(alice.agents.get(slug="codex"))

    response = api.post(
        "users/alice/tasks", {"title": "x", "agent": "claude-code"}, token=codex_token
    )
    made = api.post("users/alice/tasks", {"title": "x"}, token=codex_token)

    assert response.status_code == 400 and "agent" in response.json()["error"]["details"]
    assert made.json()["agent"] == "codex"


def test_a_token_bound_to_no_agent_reads_but_cannot_act(api, alice, alice_agent):
    token = user_token(alice)

    listed = api.get("users/alice/tasks", token=token)
    refused = api.post("users/alice/tasks", {"title": "x"}, token=token)
    inbox = api.get("users/alice/messages/inbox", token=token)

    assert listed.status_code == 200
    assert refused.status_code == 403 and error_code(refused) == "token_not_bound_to_agent"
    assert inbox.status_code == 403 and error_code(inbox) == "token_not_bound_to_agent"
    assert Task.objects.count() == 0


BAD_INPUT = [
    ("POST", "users/alice/tasks", {"title": "x", "colour": "red"}, 400),  # unknown field
    ("POST", "users/alice/tasks", {"title": 5}, 400),  # wrong type
    ("POST", "users/alice/tasks", {"title": "x", "parent_id": "one"}, 400),
    ("POST", "users/alice/tasks", {"title": "x", "priority": "asap"}, 400),
    ("POST", "users/alice/tasks", {"title": "x", "project_key": "abc"}, 400),
    ("POST", "users/alice/tasks", ["title"], 400),  # not an object
    ("POST", "users/alice/tasks", {"title": "x", "parent_id": 2**63}, 400),
    ("POST", "users/alice/heartbeat", {"machine_key": "has space"}, 400),
    ("POST", "users/alice/heartbeat", {"machine_key": "m", "task_id": 999}, 404),
    ("POST", "users/alice/sessions", {"session_id": "x" * 129}, 400),
    ("POST", "users/alice/sessions/unknown-session/touch", {}, 404),
    ("POST", "users/alice/sessions/bad%20id/touch", {}, 404),  # malformed id in the path
    ("POST", "users/alice/sessions/s/touch", {"turns": "many"}, 400),
    (
        "POST",
        "users/alice/tasks/99999999999999999999/transitions",
        {"to_state": "completed", "expected_version": 1},
        404,
    ),
    ("POST", "users/alice/tasks/123/transitions", {"to_state": "done"}, 400),
    (
        "POST",
        "users/alice/tasks/123/transitions",
        {"to_state": "completed", "expected_version": 1},
        404,
    ),
    ("POST", "users/alice/messages", {"to_agent": "x", "to_user": "nobody", "body": "hi"}, 404),
    ("POST", "users/alice/messages", {"to_agent": "claude-code", "body": ""}, 400),
    ("POST", "users/alice/messages/12345/ack", None, 404),
    ("POST", "users/alice/projects", {"remote": "not a remote"}, 400),
    ("GET", "users/alice/tasks?state=sleeping", None, 400),
    ("GET", "users/alice/tasks?limit=0", None, 400),
    ("GET", "users/alice/sessions?colour=red", None, 400),
]


@pytest.mark.parametrize(("method", "path", "body", "code"), BAD_INPUT, ids=lambda x: str(x)[:60])
def test_bad_input_is_a_4xx_in_the_shared_shape_and_changes_nothing(
    api, alice_bound, method, path, body, code
):
    events = AuditEvent.objects.count()

    response = api.call(method, path, body, token=alice_bound)

    assert response.status_code == code, response.content
    error_code(response)  # the shared shape
    assert AuditEvent.objects.count() == events
    assert Task.objects.count() == Presence.objects.count() == 0


def test_an_oversize_body_is_413(api, alice_bound, settings):
    settings.ATLAS_MAX_REQUEST_BYTES = 1000

    response = api.post(
        "users/alice/messages", {"to_agent": "claude-code", "body": "x" * 2000}, token=alice_bound
    )

    assert response.status_code == 413 and error_code(response) == "request_too_large"


def test_a_message_over_the_limit_is_400(api, alice_bound, settings):
    settings.ATLAS_MESSAGE_MAX_CHARS = 10

    response = api.post(
        "users/alice/messages", {"to_agent": "claude-code", "body": "x" * 11}, token=alice_bound
    )

    assert response.status_code == 400
