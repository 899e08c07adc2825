"""Every agents endpoint refuses: no token, a dead token, another user or tenant, a token that
is not bound to an agent; another user's task or message ids are "not found"."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from agents.models import Message, Task, TaskTransition
from agents.services.agents import presence_heartbeat
from agents.services.messages import message_send
from agents.services.projects import project_register
from agents.services.sessions import session_start
from agents.services.tasks import task_create
from tenants.models import PlatformToken
from tenants.services.tokens import token_issue, token_revoke
from tests.agents.conftest import bound_token, error_code, register, tenant_token, user_token

pytestmark = pytest.mark.django_db

READS = [
    ("GET", "users/{user}/agents", None),
    ("GET", "users/{user}/presence", None),
    ("GET", "users/{user}/projects", None),
    ("GET", "users/{user}/sessions", None),
    ("GET", "users/{user}/tasks", None),
]
USER_WRITES = [
    ("POST", "users/{user}/agents", {"slug": "codex"}),
    ("POST", "users/{user}/projects", {"path": "/src/x"}),
]
ACTING = [
    ("POST", "users/{user}/heartbeat", {"machine_key": "desk"}),
    ("POST", "users/{user}/sessions", {"session_id": "s-1"}),
    ("POST", "users/{user}/sessions/s-1/touch", {}),
    ("POST", "users/{user}/sessions/s-1/end", {}),
    ("POST", "users/{user}/tasks", {"title": "x"}),
    ("GET", "users/{user}/tasks/current", None),
    (
        "POST",
        "users/{user}/tasks/{task}/transitions",
        {"to_state": "cancelled", "expected_version": 1},
    ),
    ("POST", "users/{user}/messages", {"to_agent": "claude-code", "body": "hi"}),
    ("GET", "users/{user}/messages/inbox", None),
    ("POST", "users/{user}/messages/{message}/ack", None),
    ("POST", "users/{user}/messages/{message}/reply", {"body": "hi"}),
    (
        "POST",
        "users/{user}/operations",
        {"operations": [{"id": "o", "op": "task.create", "args": {"title": "x"}}]},
    ),
]
EVERY = READS + USER_WRITES + ACTING
WITH_IDS = [e for e in ACTING if "{task}" in e[1] or "{message}" in e[1]]


def call(api, endpoint, token, user="alice", task=1, message=1):
    method, path, body = endpoint
    return api.call(method, path.format(user=user, task=task, message=message), body, token=token)


def ids(endpoint):
    return f"{endpoint[0]} {endpoint[1]}"


@pytest.mark.parametrize("endpoint", EVERY, ids=ids)
def test_it_refuses_a_request_without_a_token(api, alice, endpoint):
    response = call(api, endpoint, token=None)

    assert response.status_code == 401 and error_code(response) == "not_authenticated"


@pytest.mark.parametrize("endpoint", EVERY, ids=ids)
def test_it_refuses_revoked_and_expired_bound_tokens(api, alice_agent, endpoint):
    revoked = bound_token(alice_agent)
    token_revoke(token=PlatformToken.objects.get(agent_slug="claude-code"))
    expired = bound_token(alice_agent)
    PlatformToken.objects.exclude(revoked_at__isnull=False).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )

    assert error_code(call(api, endpoint, revoked)) == "token_revoked"
    assert error_code(call(api, endpoint, expired)) == "token_expired"


@pytest.mark.parametrize("endpoint", EVERY, ids=ids)
def test_a_bound_token_naming_another_user_is_not_found(api, alice_bound, bob_agent, endpoint):
    response = call(api, endpoint, alice_bound, user="bob")

    assert response.status_code == 404 and error_code(response) == "user_not_found"


@pytest.mark.parametrize("endpoint", EVERY, ids=ids)
def test_a_tenant_token_naming_another_tenants_user_is_not_found(api, acme, charlie, endpoint):
    register(charlie)

    theirs = call(api, endpoint, tenant_token(acme), user="charlie")
    unknown = call(api, endpoint, tenant_token(acme), user="nobody")

    assert theirs.status_code == 404 and error_code(theirs) == "user_not_found"
    assert theirs.json()["error"]["message"] == unknown.json()["error"]["message"].replace(
        "nobody", "charlie"
    )


@pytest.mark.parametrize("endpoint", ACTING, ids=ids)
@pytest.mark.parametrize("who", ["user token", "tenant token"])
def test_acting_needs_a_token_bound_to_an_agent(api, acme, alice, alice_agent, endpoint, who):
    token = user_token(alice) if who == "user token" else tenant_token(acme)

    response = call(api, endpoint, token)

    assert response.status_code == 403 and error_code(response) == "token_not_bound_to_agent"


@pytest.mark.parametrize("endpoint", WITH_IDS, ids=ids)
def test_another_users_task_or_message_ids_are_not_found(
    api, alice_agent, alice_bound, bob, endpoint
):
    bobs = register(bob)
    task = task_create(user=bob, agent=bobs, title="Bob's")
    message = message_send(sender=alice_agent, to_user="bob", to_agent="claude-code", body="hi")
    mine = message_send(sender=bobs, to_user="alice", to_agent="claude-code", body="yo")
    # Alice may read the message she received, never the one she sent to Bob.
    assert mine.recipient == alice_agent

    response = call(api, endpoint, alice_bound, task=task.pk, message=message.pk)

    assert response.status_code == 404
    assert error_code(response) in ("task_not_found", "message_not_found")
    assert Task.objects.get(pk=task.pk).version == 1 and not TaskTransition.objects.exists()
    assert Message.objects.get(pk=message.pk).acknowledged_at is None
    assert Message.objects.count() == 2


def test_another_users_sessions_cannot_be_touched_or_ended(api, alice_bound, bob):
    session_start(agent=register(bob), session_id="s-1")

    touched = api.post("users/alice/sessions/s-1/touch", {}, token=alice_bound)
    ended = api.post("users/alice/sessions/s-1/end", {}, token=alice_bound)

    assert touched.status_code == ended.status_code == 404
    assert error_code(touched) == "session_not_found"


@pytest.mark.parametrize("endpoint", READS, ids=ids)
def test_lists_never_show_another_users_or_tenants_rows(api, alice, bob, charlie, endpoint):
    for user in (bob, charlie):
        agent = register(user)
        session_start(agent=agent, session_id="theirs")
        task_create(user=user, agent=agent, title="theirs")
        presence_heartbeat(agent=agent, machine_key="their-machine")
        project_register(user=user, path="/src/theirs")
        token_issue(tenant=user.tenant, user=user, name="x")

    response = call(api, endpoint, user_token(alice))

    assert response.status_code == 200 and response.json()["results"] == []
