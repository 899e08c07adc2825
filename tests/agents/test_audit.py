"""Every state change of the agents app writes its audit event, with ids and never text."""

from __future__ import annotations

import json

import pytest

from agents.services.agents import agent_register, agent_token_issue, presence_heartbeat
from agents.services.messages import message_ack, message_reply, message_send
from agents.services.projects import project_register
from agents.services.sessions import session_end, session_start
from agents.services.tasks import task_create, task_transition
from tenants.models import AuditEvent
from tests.agents.conftest import register

pytestmark = pytest.mark.django_db

SECRET = "the launch code is 0000"


def _message(w):
    return message_send(sender=w["alice"], to_user="bob", to_agent="claude-code", body=SECRET)


CHANGES = {
    "agent.register": (lambda w: agent_register(user=w["alice"].user, slug="codex"), 1),
    # token.issue (tenants) and agent.token_bind, in one transaction
    "agent.token_bind": (lambda w: agent_token_issue(agent=w["alice"], name="bot"), 2),
    # the first heartbeat of a new machine registers it and starts the presence row
    "presence.start": (lambda w: presence_heartbeat(agent=w["alice"], machine_key="m2"), 2),
    "session.start": (lambda w: session_start(agent=w["alice"], session_id="s2"), 1),
    "session.end": (lambda w: session_end(agent=w["alice"], session_id="s1"), 1),
    "task.create": (lambda w: task_create(user=w["alice"].user, title=SECRET), 1),
    "task.transition": (
        lambda w: task_transition(
            user=w["alice"].user,
            task_id=w["task"].pk,
            to_state="in_progress",
            expected_version=1,
            outcome=SECRET,
        ),
        1,
    ),
    "message.send": (_message, 1),
    "message.reply": (
        lambda w: message_reply(agent=w["bob"], message_id=w["message"].pk, body=SECRET),
        1,
    ),
    "message.ack": (lambda w: message_ack(agent=w["bob"], message_id=w["message"].pk), 1),
    "project.register": (lambda w: project_register(user=w["alice"].user, path="/src/new"), 1),
    "project.update": (
        lambda w: project_register(user=w["alice"].user, path="/src/x", team_visible=True),
        1,
    ),
}


@pytest.fixture
def world(alice, bob):
    agent, bobs = register(alice), register(bob)
    session_start(agent=agent, session_id="s1")
    project_register(user=alice, path="/src/x")
    task = task_create(user=alice, agent=agent, title="t")
    message = message_send(sender=agent, to_user="bob", to_agent="claude-code", body="hi")
    return {"alice": agent, "bob": bobs, "task": task, "message": message}


@pytest.mark.parametrize("action", sorted(CHANGES))
def test_each_change_writes_its_audit_event_without_text(world, action):
    change, events = CHANGES[action]
    before = AuditEvent.objects.count()

    change(world)

    new = list(AuditEvent.objects.order_by("-id")[: AuditEvent.objects.count() - before])
    assert len(new) == events
    assert action in [e.action for e in new]
    for event in new:
        assert event.tenant_id is not None and event.subject_user_id is not None
        assert SECRET not in json.dumps(event.metadata) and "0000" not in event.target_id
