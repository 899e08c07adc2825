"""A token bound to an agent, for one machine: ``POST /users/{user}/agents/{slug}/tokens``
(with the tenant's provisioning right) and the user page's "Issue an agent-bound token"."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tenants.models import AuditEvent, PlatformToken
from tests.agents.conftest import error_code, tenant_token, user_token

pytestmark = pytest.mark.django_db
PATH = "users/alice/agents/claude-code/tokens"


@pytest.fixture
def provisioning(acme):
    return tenant_token(acme, allow_provisioning=True)


def test_a_provisioning_token_issues_a_bound_token_per_machine(api, alice, provisioning):
    laptop = api.post(PATH, {"machine": "work laptop"}, token=provisioning)
    desk = api.post(PATH, {"machine": "desk"}, token=provisioning)

    assert (laptop.status_code, desk.status_code) == (201, 201)
    body = laptop.json()
    assert body["name"] == "claude-code on work laptop"
    assert (body["user"], body["agent"]) == ("alice", "claude-code")
    assert laptop["Cache-Control"] == "no-store"
    who = api.get("token", token=body["token"]).json()
    assert (who["user"], who["agent"]) == ("alice", "claude-code")
    assert laptop.json()["token"] != desk.json()["token"]
    tokens = PlatformToken.objects.filter(user=alice, agent_slug="claude-code")
    assert sorted(t.name for t in tokens) == ["claude-code on desk", "claude-code on work laptop"]
    assert AuditEvent.objects.filter(action="agent.token_bind").count() == 2


def test_the_bound_token_acts_as_its_agent(api, alice, provisioning):
    secret = api.post(PATH, {"machine": "laptop"}, token=provisioning).json()["token"]

    beat = api.post("users/alice/heartbeat", {"machine_key": "m-1"}, token=secret)

    assert beat.status_code == 200 and beat.json()["agent"] == "claude-code"


@pytest.mark.parametrize("kind", ["user", "tenant without provisioning"])
def test_a_token_without_the_provisioning_right_is_refused(api, alice, acme, kind):
    token = user_token(alice) if kind == "user" else tenant_token(acme)

    response = api.post(PATH, {"machine": "laptop"}, token=token)

    assert response.status_code == 403
    assert error_code(response) == "provisioning_not_allowed"
    assert not PlatformToken.objects.filter(agent_slug="claude-code").exists()


def test_another_tenants_user_is_not_found(api, charlie, provisioning):
    response = api.post(
        "users/charlie/agents/claude-code/tokens", {"machine": "x"}, token=provisioning
    )

    assert response.status_code == 404


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        (PATH, {}, "machine"),
        (PATH, {"machine": "   "}, "machine"),
        (PATH, {"machine": "m" * 41}, "machine"),
        (PATH, {"machine": "m", "owner": "bob"}, "owner"),
        ("users/alice/agents/Not_A_Slug/tokens", {"machine": "m"}, None),
    ],
)
def test_bad_input_is_a_400_and_issues_nothing(api, alice, provisioning, path, body, field):
    response = api.post(path, body, token=provisioning)

    assert response.status_code == 400, response.json()
    if field:
        assert field in str(response.json()["error"])
    assert not PlatformToken.objects.filter(user=alice).exists()


def agent_token_page(user):
    return reverse("admin:tenants_user_agent_token", args=[user.pk])


def test_the_user_page_issues_a_bound_token_shown_once(acme_client, alice):
    change = acme_client.get(reverse("admin:tenants_user_change", args=[alice.pk]))
    form = acme_client.get(agent_token_page(alice))

    issued = acme_client.post(agent_token_page(alice), {"agent": "claude-code", "machine": "desk"})

    assert "Issue an agent-bound token" in change.content.decode()
    assert form.status_code == 200 and 'name="machine"' in form.content.decode()
    # Post-redirect-get: the secret is shown once, on a GET page of its own; a reload of that
    # page shows it no more and issues nothing.
    assert issued.status_code == 302
    shown = acme_client.get(issued["Location"])
    again = acme_client.get(issued["Location"])
    assert shown.status_code == 200 and "no-store" in shown["Cache-Control"]
    token = PlatformToken.objects.get(user=alice)
    assert (token.agent_slug, token.name) == ("claude-code", "claude-code on desk")
    assert f"atlas_{token.lookup}_" in shown.content.decode()
    assert f"atlas_{token.lookup}_" not in again.content.decode()
    assert PlatformToken.objects.filter(user=alice).count() == 1


def test_the_user_page_is_not_found_for_another_tenants_user(acme_client, charlie):
    page = agent_token_page(charlie)

    assert acme_client.get(page).status_code == 404
    assert acme_client.post(page, {"agent": "x", "machine": "y"}).status_code == 404
    assert not PlatformToken.objects.filter(user=charlie).exists()


def test_an_auditor_may_not_issue(auditor_client, alice):
    response = auditor_client.post(
        agent_token_page(alice), {"agent": "claude-code", "machine": "m"}
    )

    assert response.status_code == 403
    assert not PlatformToken.objects.filter(user=alice).exists()


def test_a_bad_form_issues_nothing(acme_client, alice):
    response = acme_client.post(agent_token_page(alice), {"agent": "Bad Slug!", "machine": ""})

    assert response.status_code == 200 and "errorlist" in response.content.decode()
    assert not PlatformToken.objects.filter(user=alice).exists()
