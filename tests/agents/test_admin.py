"""Agents in the admin: tenant-scoped pages (agents, machines, projects, sessions, tasks with
their transitions, messages), read-only for auditors, the bound-token action, the dashboard's
agent activity panel."""

from __future__ import annotations

import pytest
from django.urls import reverse

from agents.models import Agent, Machine, Message, Project, Session, Task
from agents.services.agents import presence_heartbeat
from agents.services.messages import message_send
from agents.services.projects import project_register
from agents.services.sessions import session_start
from agents.services.tasks import task_create, task_transition
from tenants.models import PlatformToken
from tests.agents.conftest import register

pytestmark = pytest.mark.django_db

PAGES = ["agent", "machine", "project", "session", "task", "message"]
MODELS = {
    "agent": Agent,
    "machine": Machine,
    "project": Project,
    "session": Session,
    "task": Task,
    "message": Message,
}


def populate(user, tag):
    agent = register(user)
    other = register(user, "codex")
    presence_heartbeat(agent=agent, machine_key=f"{tag}-machine", label=f"{tag} laptop")
    project_register(user=user, path=f"/src/{tag}-project", name=f"{tag}-project")
    session_start(agent=agent, session_id=f"{tag}-session")
    task = task_create(user=user, agent=agent, title=f"{tag} task")
    task_transition(user=user, task_id=task.pk, to_state="in_progress", expected_version=1)
    message_send(sender=agent, to_agent="codex", subject=f"{tag} subject", body=f"{tag} body")
    return agent, other


@pytest.fixture
def world(acme, globex, alice, charlie, acme_admin, acme_auditor, globex_admin):
    return {"acme": populate(alice, "acmeside"), "globex": populate(charlie, "globexside")}


def changelist(model: str) -> str:
    return reverse(f"admin:agents_{model}_changelist")


def change(model: str, pk: int) -> str:
    return reverse(f"admin:agents_{model}_change", args=[pk])


@pytest.mark.parametrize("model", PAGES)
def test_a_tenant_admin_sees_only_their_tenant(world, acme_client, model):
    response = acme_client.get(changelist(model))

    page = response.content.decode()
    assert response.status_code == 200
    assert "globexside" not in page and "charlie" not in page
    assert "acmeside" in page or "alice" in page


TENANT_PATH = {
    "agent": "user__tenant__slug",
    "machine": "user__tenant__slug",
    "project": "user__tenant__slug",
    "session": "agent__user__tenant__slug",
    "task": "user__tenant__slug",
    "message": "sender__user__tenant__slug",
}


@pytest.mark.parametrize("model", PAGES)
def test_another_tenants_rows_do_not_open(world, acme_client, model):
    row = MODELS[model]._default_manager.filter(**{TENANT_PATH[model]: "globex"}).first()
    assert row is not None

    response = acme_client.get(change(model, row.pk))

    assert response.status_code == 302  # Django admin: "doesn't exist", back to the index


def test_a_task_page_shows_its_transitions(world, acme_client):
    task = Task.objects.get(title="acmeside task")

    page = acme_client.get(change("task", task.pk)).content.decode()

    assert "in_progress" in page and "applied" in page


def test_an_auditor_reads_every_page_and_cannot_act(world, auditor_client):
    agent = Agent.objects.get(user__external_id="alice", slug="claude-code")

    pages = [auditor_client.get(changelist(model)).status_code for model in PAGES]
    action = auditor_client.post(
        changelist("agent"), {"action": "issue_token", "_selected_action": [agent.pk]}
    )

    assert pages == [200] * len(PAGES)
    assert "issue_token" not in auditor_client.get(changelist("agent")).content.decode()
    assert action.status_code in (200, 302)
    assert not PlatformToken.objects.exclude(agent_slug="").exists()


def test_a_tenant_admin_issues_a_token_bound_to_an_agent(world, acme_client):
    agent = Agent.objects.get(user__external_id="alice", slug="claude-code")

    response = acme_client.post(
        changelist("agent"), {"action": "issue_token", "_selected_action": [agent.pk]}, follow=True
    )

    token = PlatformToken.objects.get(agent_slug="claude-code")
    assert response.redirect_chain[-1][0].endswith(f"/platformtoken/{token.pk}/issued/")
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    assert token.user == agent.user and f"atlas_{token.lookup}_" in response.content.decode()


def test_a_tenant_admin_cannot_issue_a_token_for_another_tenants_agent(world, acme_client):
    theirs = Agent.objects.get(user__external_id="charlie", slug="claude-code")

    acme_client.post(
        changelist("agent"), {"action": "issue_token", "_selected_action": [theirs.pk]}
    )

    assert not PlatformToken.objects.exclude(agent_slug="").exists()


def test_the_dashboard_shows_agent_activity(world, acme, acme_client):
    agent = Agent.objects.get(user__external_id="alice", slug="claude-code")
    presence_heartbeat(agent=agent, machine_key="acmeside-machine", session_id="acmeside-session")

    page = acme_client.get(reverse("admin:tenants_tenant_dashboard", args=[acme.pk]))

    html = page.content.decode()
    assert page.status_code == 200
    assert 'id="agents-active">1<' in html and 'id="agents-total">2<' in html
    assert "Agent sessions per day" in html and "Tasks by state" in html
    assert "<td>in_progress</td><td>1</td>" in html


def test_the_panel_stays_hidden_for_a_tenant_without_agents(acme, acme_client):
    html = acme_client.get(reverse("admin:tenants_tenant_dashboard", args=[acme.pk])).content
    assert b"agents-active" not in html
