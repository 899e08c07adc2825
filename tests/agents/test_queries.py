"""List endpoints cost the same number of queries for one row as for many (no N+1)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.services.agents import presence_heartbeat
from agents.services.messages import message_send
from agents.services.projects import project_register
from agents.services.sessions import session_start
from agents.services.tasks import task_create

pytestmark = pytest.mark.django_db

LISTS = [
    "users/alice/agents",
    "users/alice/presence",
    "users/alice/projects?team=true",
    "users/alice/sessions",
    "users/alice/tasks",
    "users/alice/tasks/current",
    "users/alice/messages/inbox",
]


def add_rows(alice_agent, bob_agent, n, start):
    for i in range(start, start + n):
        project = project_register(user=alice_agent.user, path=f"/src/p{i}").project
        session_start(agent=alice_agent, session_id=f"s{i}", project_key=project.key)
        presence_heartbeat(agent=alice_agent, machine_key=f"m{i}", session_id=f"s{i}")
        task_create(
            user=alice_agent.user, agent=alice_agent, title=f"t{i}", project_key=project.key
        )
        message_send(sender=bob_agent, to_user="alice", to_agent="claude-code", body=f"b{i}")
        project_register(user=bob_agent.user, path=f"/src/team{i}", team_visible=True)


def queries(api, path, token):
    with CaptureQueriesContext(connection) as captured:
        response = api.get(path, token=token)
    assert response.status_code == 200
    return len(captured)


@pytest.mark.parametrize("path", LISTS)
def test_a_list_costs_the_same_for_one_row_and_for_six(
    api, alice_agent, bob_agent, alice_bound, path
):
    add_rows(alice_agent, bob_agent, 1, 0)
    queries(api, path, alice_bound)  # the token's first use is recorded once
    one = queries(api, path, alice_bound)

    add_rows(alice_agent, bob_agent, 5, 1)
    six = queries(api, path, alice_bound)

    assert six == one
