"""User provisioning over the API (``/api/v1/users``) for tenant tokens with the provisioning
right, the refusals around it, and auto-provisioning on a first turn."""

from __future__ import annotations

import pytest

from tenants.models import AuditEvent, ScopedKey, Tenant, User
from tests.atlas_server.conftest import error_code, tenant_token, user_token

pytestmark = pytest.mark.usefixtures("store")


@pytest.fixture
def provisioner(acme):
    return tenant_token(acme, allow_provisioning=True)


def test_a_provisioning_token_creates_a_user(api, acme, provisioner):
    response = api.post("users", {"external_id": "erin", "display_name": "Erin"}, token=provisioner)

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["external_id"] == "erin" and body["status"] == "active"
    assert body["key"] == {"state": "missing", "key_id": None} and body["key_error"] is None
    user = User.objects.get(tenant=acme, external_id="erin")
    assert user.display_name == "Erin"
    assert AuditEvent.objects.filter(action="user.create", subject_user=user).count() == 1


def test_a_duplicate_user_is_refused_and_writes_nothing(api, acme, alice, provisioner):
    response = api.post("users", {"external_id": "alice"}, token=provisioner)

    assert response.status_code == 400 and error_code(response) == "duplicate_user"
    assert User.objects.filter(tenant=acme).count() == 1


def test_a_bad_external_id_is_a_400(api, acme, provisioner):
    response = api.post("users", {"external_id": "has spaces/slash"}, token=provisioner)

    assert response.status_code == 400
    assert not User.objects.filter(tenant=acme).exists()


def test_users_are_listed_a_page_at_a_time_and_by_status(api, acme, provisioner):
    for name in ["dan", "cara", "bea", "abe"]:
        User.objects.create(tenant=acme, external_id=name)
    User.objects.filter(external_id="cara").update(status="disabled")

    first = api.get("users?limit=3", token=provisioner).json()
    rest = api.get(f"users?limit=3&after={first['next']}", token=provisioner).json()
    disabled = api.get("users?status=disabled", token=provisioner).json()

    assert [u["external_id"] for u in first["results"]] == ["abe", "bea", "cara"]
    assert [u["external_id"] for u in rest["results"]] == ["dan"] and rest["next"] is None
    assert [u["external_id"] for u in disabled["results"]] == ["cara"]


def test_the_listing_stays_within_the_tokens_tenant(api, alice, charlie, provisioner):
    body = api.get("users", token=provisioner).json()

    assert [u["external_id"] for u in body["results"]] == ["alice"]
    assert api.get("users/charlie", token=provisioner).status_code == 404


@pytest.mark.parametrize("external_id", ["bob%00", "bob%00/disable", "%00", "b%C3%A9b%00"])
def test_a_user_id_no_user_can_have_is_not_found(api, bob, provisioner, external_id):
    """A NUL byte (which PostgreSQL cannot even compare) names nobody: 404, never a 500."""
    method = "POST" if external_id.endswith("/disable") else "GET"
    response = api.call(method, f"users/{external_id}", token=provisioner)

    assert response.status_code == 404, response.content
    assert error_code(response) == "user_not_found"
    bob.refresh_from_db()
    assert bob.status == "active"


def test_disable_then_enable_again(api, alice, provisioner):
    off = api.post("users/alice/disable", token=provisioner)
    again = api.post("users/alice/disable", token=provisioner)
    refused = api.post("users/alice/recall", {"query": "tea"}, token=provisioner)
    on = api.post("users/alice/enable", token=provisioner)
    works = api.post("users/alice/recall", {"query": "tea"}, token=provisioner)

    assert off.status_code == 200 and off.json()["status"] == "disabled"
    assert again.status_code == 409
    assert refused.status_code == 403 and error_code(refused) == "user_disabled"
    assert "disabled" in refused.json()["error"]["message"]
    assert on.status_code == 200 and on.json()["status"] == "active"
    assert works.status_code == 200
    actions = list(AuditEvent.objects.filter(subject_user=alice).values_list("action", flat=True))
    assert actions.count("user.disable") == 1 and actions.count("user.enable") == 1


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "users", None),
        ("POST", "users", {"external_id": "zed"}),
        ("GET", "users/alice", None),
        ("POST", "users/alice/disable", None),
        ("POST", "users/alice/enable", None),
    ],
)
def test_tokens_without_the_right_are_refused(api, acme, alice, method, path, body):
    plain = tenant_token(acme, allow_catalog=True)
    own = user_token(alice, allow_provisioning=True)  # ignored: user tokens never provision

    for token in (plain, own):
        response = api.call(method, path, body, token=token)
        assert response.status_code == 403, (token, response.content)
        assert error_code(response) == "provisioning_not_allowed"
    assert api.call(method, path, body).status_code == 401
    assert not User.objects.filter(external_id="zed").exists()


def test_a_user_token_naming_another_user_says_so_truthfully(api, alice, bob):
    response = api.post("users/bob/recall", {"query": "tea"}, token=user_token(alice))

    assert response.status_code == 404 and error_code(response) == "user_not_found"
    message = response.json()["error"]["message"]
    assert "one user only" in message and "No user" not in message


def test_a_turn_for_an_unknown_user_provisions_them_where_the_tenant_allows(api, acme, provisioner):
    refused = api.post("users/erin/turns", {"text": "I like oolong"}, token=provisioner)
    Tenant.objects.filter(pk=acme.pk).update(auto_provision_users=True)
    plain = api.post("users/erin/turns", {"text": "I like oolong"}, token=tenant_token(acme))
    made = api.post("users/erin/turns", {"text": "I like oolong"}, token=provisioner)
    recall = api.post("users/erin/recall", {"query": "not a turn"}, token=provisioner)

    assert refused.status_code == 404 and error_code(refused) == "user_not_found"
    assert plain.status_code == 404  # a token without the right never creates users
    assert made.status_code == 201, made.content
    assert User.objects.filter(tenant=acme, external_id="erin").count() == 1
    assert recall.status_code == 200
    unknown_recall = api.post("users/fred/recall", {"query": "x"}, token=provisioner)
    assert unknown_recall.status_code == 404  # only a turn provisions


def test_a_disabled_user_is_not_re_provisioned_by_a_turn(api, acme, alice, provisioner):
    Tenant.objects.filter(pk=acme.pk).update(auto_provision_users=True)
    User.objects.filter(pk=alice.pk).update(status="disabled")

    response = api.post("users/alice/turns", {"text": "hello"}, token=provisioner)

    assert response.status_code == 403 and error_code(response) == "user_disabled"


def test_a_user_on_a_cluster_enforced_tenant_gets_their_key(api, es, settings):
    tenant = Tenant.objects.create(slug="dlsco", name="DLS Co", isolation_mode="dls")
    token = tenant_token(tenant, allow_provisioning=True)

    response = api.post("users", {"external_id": "gina"}, token=token)

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["key"]["state"] == "active" and body["key_error"] is None
    key = ScopedKey.objects.get(user__external_id="gina", status="active")
    assert body["key"]["key_id"] == key.key_id


def test_a_key_the_cluster_cannot_make_is_named_and_the_user_kept(api, no_cluster):
    tenant = Tenant.objects.create(slug="dlsco", name="DLS Co", isolation_mode="dls")
    token = tenant_token(tenant, allow_provisioning=True)

    response = api.post("users", {"external_id": "gina"}, token=token)

    assert response.status_code == 201
    assert response.json()["key"]["state"] == "missing"
    assert "cluster" in response.json()["key_error"].lower()
