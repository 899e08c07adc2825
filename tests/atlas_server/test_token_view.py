"""``GET /api/v1/token`` and the refusals every token-authenticated endpoint shares."""

from datetime import timedelta

import pytest
from django.utils import timezone

from tenants.models import PlatformToken
from tenants.services.tenants import tenant_suspend
from tenants.services.tokens import token_issue, token_revoke

pytestmark = pytest.mark.django_db
URL = "/api/v1/token"


def get(client, secret=None, header=None):
    headers = {"HTTP_AUTHORIZATION": header or f"Bearer {secret}"} if (secret or header) else {}
    return client.get(URL, **headers)


def test_it_says_who_the_token_is(client, alice):
    issued = token_issue(tenant=alice.tenant, user=alice, name="alice bot")

    response = get(client, issued.secret)

    assert response.status_code == 200
    assert response.json() == {
        "name": "alice bot",
        "tenant": {"slug": "acme", "name": "Acme"},
        "scope": "user",
        "user": "alice",
        "agent": None,
        "allow_catalog": False,
        "allow_provisioning": False,
        "allow_export": False,
        "expires_at": None,
        "isolation_mode": "filter",
    }
    assert response["X-Request-ID"]


def test_it_names_the_agent_a_token_is_bound_to(client, alice):
    from agents.services.agents import agent_register, agent_token_issue

    agent = agent_register(user=alice, slug="claude-code").agent
    issued = agent_token_issue(agent=agent, name="laptop")

    body = get(client, issued.secret).json()

    assert body["agent"] == "claude-code" and body["user"] == "alice"


def test_a_tenant_token_has_tenant_scope(client, acme):
    issued = token_issue(tenant=acme, name="fleet", allow_catalog=True)

    body = get(client, issued.secret).json()

    assert body["scope"] == "tenant" and body["user"] is None and body["allow_catalog"] is True


@pytest.mark.parametrize(
    ("header", "code"),
    [
        (None, "not_authenticated"),
        ("Bearer atlas_nope", "token_malformed"),
        ("Token abc", "authentication_failed"),
        ("Bearer atlas_aaaaaaaaaaaa_" + "A" * 43, "token_invalid"),
    ],
)
def test_it_refuses_missing_and_malformed_tokens(client, db, header, code):
    response = get(client, header=header) if header else client.get(URL)

    assert response.status_code == 401
    assert response.json()["error"]["code"] == code
    assert response.json()["error"]["message"]


def test_it_refuses_revoked_expired_and_suspended(client, alice):
    revoked = token_issue(tenant=alice.tenant, user=alice, name="r")
    token_revoke(token=revoked.token)
    expired = token_issue(tenant=alice.tenant, user=alice, name="e")
    PlatformToken.objects.filter(pk=expired.token.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )

    assert get(client, revoked.secret).json()["error"]["code"] == "token_revoked"
    assert get(client, expired.secret).json()["error"]["code"] == "token_expired"

    live = token_issue(tenant=alice.tenant, user=alice, name="l")
    tenant_suspend(tenant=alice.tenant)
    assert get(client, live.secret).status_code == 401
