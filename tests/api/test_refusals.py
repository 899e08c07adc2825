"""Every endpoint refuses: no token, a dead token, another user or tenant, no catalog rights."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memory.services.writes import memory_write
from tenants.models import PlatformToken
from tenants.services.tokens import token_issue, token_revoke
from tests.api.conftest import error_code, tenant_token, user_token

pytestmark = pytest.mark.usefixtures("store")

MEMORY = "0" * 32
USER_ENDPOINTS = [
    ("POST", "users/{user}/turns", {"text": "hello"}),
    ("POST", "users/{user}/recall", {"query": "hello"}),
    ("POST", "users/{user}/memories", {"text": "x", "memory_type": "semantic"}),
    ("GET", "users/{user}/memories", None),
    ("GET", "users/{user}/export", None),
    ("GET", "users/{user}/memories/{id}", None),
    ("GET", "users/{user}/memories/{id}/history", None),
    ("DELETE", "users/{user}/memories/{id}", None),
    ("POST", "users/{user}/procedures/{id}/outcome", {"success": True}),
    ("POST", "users/{user}/consolidate", None),
    ("POST", "users/{user}/forget-requests", {"scope": "user"}),
    ("GET", "users/{user}/forget-requests", None),
    ("GET", "users/{user}/forget-requests/1", None),
]
CATALOG_ENDPOINTS = [
    ("GET", "catalog", None),
    ("PUT", "catalog/faq-1", {"text": "Opening hours"}),
    ("DELETE", "catalog/faq-1", None),
]
EVERY_ENDPOINT = USER_ENDPOINTS + CATALOG_ENDPOINTS
ID_ENDPOINTS = [e for e in USER_ENDPOINTS if "{id}" in e[1]]


def call(api, endpoint, token, user="alice", memory_id=MEMORY):
    method, path, body = endpoint
    return api.call(method, path.format(user=user, id=memory_id), body, token=token)


@pytest.mark.parametrize("endpoint", EVERY_ENDPOINT, ids=lambda e: f"{e[0]} {e[1]}")
def test_it_refuses_a_request_without_a_token(api, alice, endpoint):
    response = call(api, endpoint, token=None)

    assert response.status_code == 401 and error_code(response) == "not_authenticated"
    assert response["WWW-Authenticate"] == "Bearer"


@pytest.mark.parametrize("endpoint", EVERY_ENDPOINT, ids=lambda e: f"{e[0]} {e[1]}")
def test_it_refuses_revoked_and_expired_tokens(api, acme, alice, endpoint):
    revoked = token_issue(tenant=acme, name="revoked", allow_catalog=True)
    token_revoke(token=revoked.token)
    expired = token_issue(tenant=acme, name="expired", allow_catalog=True)
    PlatformToken.objects.filter(pk=expired.token.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )

    gone = call(api, endpoint, revoked.secret)
    late = call(api, endpoint, expired.secret)

    assert gone.status_code == 401 and error_code(gone) == "token_revoked"
    assert late.status_code == 401 and error_code(late) == "token_expired"


@pytest.mark.parametrize("endpoint", USER_ENDPOINTS, ids=lambda e: f"{e[0]} {e[1]}")
def test_a_user_token_naming_another_user_is_not_found(api, alice, bob, endpoint):
    bobs = memory_write(user=bob, text="Bob's PIN hint is blue", memory_type="semantic")

    response = call(api, endpoint, user_token(alice), user="bob", memory_id=bobs.id)

    assert response.status_code == 404 and error_code(response) == "user_not_found"


@pytest.mark.parametrize("endpoint", USER_ENDPOINTS, ids=lambda e: f"{e[0]} {e[1]}")
def test_a_tenant_token_naming_another_tenants_user_is_not_found(api, acme, charlie, endpoint):
    theirs = memory_write(user=charlie, text="Globex launch date", memory_type="semantic")

    response = call(api, endpoint, tenant_token(acme), user="charlie", memory_id=theirs.id)
    unknown = call(api, endpoint, tenant_token(acme), user="nobody", memory_id=theirs.id)

    assert response.status_code == 404 and error_code(response) == "user_not_found"
    assert response.json()["error"]["message"] == unknown.json()["error"]["message"].replace(
        "nobody", "charlie"
    )  # the same answer as for a user that does not exist: nothing leaks


@pytest.mark.parametrize("endpoint", ID_ENDPOINTS, ids=lambda e: f"{e[0]} {e[1]}")
def test_another_users_memory_id_is_not_found(api, alice, bob, endpoint):
    bobs = memory_write(user=bob, text="Bob's locker is 12", memory_type="semantic")

    response = call(api, endpoint, user_token(alice), memory_id=bobs.id)

    assert response.status_code == 404 and error_code(response) == "memory_not_found"


@pytest.mark.parametrize("endpoint", CATALOG_ENDPOINTS, ids=lambda e: f"{e[0]} {e[1]}")
@pytest.mark.parametrize("who", ["user token", "user token with catalog flag", "tenant token"])
def test_catalog_endpoints_need_a_tenant_token_with_catalog_rights(api, acme, alice, endpoint, who):
    token = {
        "user token": lambda: user_token(alice),
        "user token with catalog flag": lambda: user_token(alice, allow_catalog=True),
        "tenant token": lambda: tenant_token(acme),
    }[who]()

    response = call(api, endpoint, token)

    assert response.status_code == 403 and error_code(response) == "catalog_not_allowed"
    assert "catalog rights" in response.json()["error"]["message"]


def test_one_tenants_catalog_is_invisible_to_another(api, acme, globex):
    api.put(
        "catalog/faq-1",
        {"text": "Acme opening hours"},
        token=tenant_token(acme, allow_catalog=True),
    )
    globex_token = tenant_token(globex, allow_catalog=True)

    listed = api.get("catalog", token=globex_token).json()
    deleted = api.delete("catalog/faq-1", token=globex_token)

    assert listed["results"] == [] and deleted.status_code == 404


def test_a_catalog_put_cannot_touch_another_tenants_document(api, acme, globex):
    acme_token = tenant_token(acme, allow_catalog=True)
    api.put("catalog/faq-1", {"text": "Acme opening hours"}, token=acme_token)

    api.put(
        "catalog/faq-1",
        {"text": "Globex opening hours"},
        token=tenant_token(globex, allow_catalog=True),
    )

    assert [d["text"] for d in api.get("catalog", token=acme_token).json()["results"]] == [
        "Acme opening hours"
    ]
