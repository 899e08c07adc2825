"""Agents endpoints that act need a token bound to an agent; lists never show another user's or
tenant's rows. (No token, a dead token, another user's or tenant's user and object ids: the
generated probes of every route, tests/atlas_server/test_refusals.py.)"""

from __future__ import annotations

import pytest

from agents.services.agents import presence_heartbeat
from agents.services.projects import project_register
from agents.services.sessions import session_start
from agents.services.tasks import task_create
from tenants.services.tokens import token_issue
from tests.agents.conftest import error_code, register, tenant_token, user_token

pytestmark = pytest.mark.django_db

READS = [
    ("GET", "users/{user}/agents", None),
    ("GET", "users/{user}/presence", None),
    ("GET", "users/{user}/projects", None),
    ("GET", "users/{user}/sessions", None),
    ("GET", "users/{user}/tasks", None),
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


def call(api, endpoint, token, user="alice", task=1, message=1):
    method, path, body = endpoint
    return api.call(method, path.format(user=user, task=task, message=message), body, token=token)


def ids(endpoint):
    return f"{endpoint[0]} {endpoint[1]}"


@pytest.mark.parametrize("endpoint", ACTING, ids=ids)
@pytest.mark.parametrize("who", ["user token", "tenant token"])
def test_acting_needs_a_token_bound_to_an_agent(api, acme, alice, alice_agent, endpoint, who):
    token = user_token(alice) if who == "user token" else tenant_token(acme)

    response = call(api, endpoint, token)

    assert response.status_code == 403 and error_code(response) == "token_not_bound_to_agent"


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
