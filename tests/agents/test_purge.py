"""Erasure of a user removes every agents row of that user, and nobody else's."""

from __future__ import annotations

import pytest
from django.apps import apps

from agents.models import MemoryFile, Task
from agents.services.agents import presence_heartbeat
from agents.services.messages import message_reply, message_send
from agents.services.operations import Operation, operations_apply
from agents.services.projects import project_register
from agents.services.purge import agents_user_purge
from agents.services.sessions import session_start, session_touch
from agents.services.tasks import task_create, task_transition
from tenants.models import AuditEvent
from tests.agents.conftest import register

pytestmark = pytest.mark.django_db


def everything(user, peer_agent):
    agent = register(user)
    project = project_register(user=user, remote=f"git@h.com:{user.external_id}/x.git").project
    session_start(agent=agent, session_id="s", project_key=project.key)
    session_touch(agent=agent, session_id="s", files=["a.py"])
    presence_heartbeat(agent=agent, machine_key="m", session_id="s")
    task = task_create(user=user, agent=agent, title="t", project_key=project.key)
    task_transition(user=user, task_id=task.pk, to_state="in_progress", expected_version=1)
    sent = message_send(
        sender=agent, to_user=peer_agent.user.external_id, to_agent=peer_agent.slug, body="hi"
    )
    message_reply(agent=peer_agent, message_id=sent.pk, body="hello")
    applied = Operation(id="op", kind="task.create", request_hash="0" * 64, run=lambda: {"t": 1})
    operations_apply(user=user, agent=agent, operations=[applied])
    MemoryFile.objects.create(user=user, project=project, path="notes.md", content_hash="0" * 64)
    return agent


# How each agents model reaches its user: a new model must be added here (and to the purge).
OWNER = {
    "Agent": "user",
    "Machine": "user",
    "Project": "user",
    "Session": "agent__user",
    "Presence": "agent__user",
    "Task": "user",
    "TaskTransition": "task__user",
    "Message": "sender__user",
    "MemoryFile": "user",
}


def agents_rows(user) -> dict[str, int]:
    models = apps.get_app_config("agents").get_models()
    return {
        m.__name__: m._default_manager.filter(**{OWNER[m.__name__]: user}).count() for m in models
    }


def test_a_users_purge_removes_all_of_it_and_only_it(alice, bob):
    bobs = register(bob)
    everything(alice, bobs)
    task_create(user=bob, agent=bobs, title="Bob keeps this")
    assert all(agents_rows(alice).values())

    counts = agents_user_purge(user=alice)

    assert set(agents_rows(alice).values()) == {0}
    assert counts["messages"] == 2  # sent and received, Bob's reply too
    assert bobs.inbox.count() == 0 and Task.objects.filter(user=bob).count() == 1
    event = AuditEvent.objects.get(action="agents.user_purge")
    assert event.subject_user_id == alice.pk and event.metadata == counts


def test_purging_a_user_without_agents_records_zero_counts(alice):
    assert set(agents_user_purge(user=alice).values()) == {0}
