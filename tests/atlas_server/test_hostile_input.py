"""Hostile input that used to reach a 5xx: deep JSON, bad admin filters, out-of-range cursors
and integers. Each is a 4xx in the shared error shape, with nothing written."""

from __future__ import annotations

import base64
import json

import pytest
from django.urls import reverse

from memory.selectors import memory_page
from tenants.models import AuditEvent
from tests.atlas_server.conftest import error_code, tenant_token

DEEP = 5000


def deep_json(depth: int = DEEP) -> str:
    return (
        '{"text": "x", "memory_type": "semantic", "metadata": {"a": '
        + "[" * depth
        + "]" * depth
        + "}}"
    )


def cursor(created_at: str, memory_id: str = "x") -> str:
    raw = json.dumps([created_at, memory_id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.usefixtures("store")
def test_a_5000_level_nested_body_is_a_400_and_nothing_is_written(api, alice, alice_token):
    response = api.post("users/alice/memories", raw=deep_json(), token=alice_token)

    assert response.status_code == 400, response.content
    assert error_code(response) == "too_deep"
    assert memory_page(user=alice).documents == []


@pytest.mark.parametrize(
    "created_at",
    [
        "9999-12-31T23:59:59+00:00",
        "0001-01-01T00:00:00+00:00",
        "9999-12-31T23:59:59-05:00",
        "1899-12-31T23:59:59+00:00",
    ],
)
def test_a_catalog_cursor_outside_the_stores_dates_is_a_400(api, acme, engine, created_at):
    token = tenant_token(acme, allow_catalog=True)

    response = api.get(f"catalog?after={cursor(created_at)}", token=token)

    assert response.status_code == 400, response.content
    assert error_code(response) == "bad_cursor"


@pytest.mark.parametrize("value", [2**64, -(2**63) - 1, 10**30])
def test_an_integer_beyond_64_bits_in_metadata_is_a_400(api, alice, alice_token, engine, value):
    body = {"text": "x", "memory_type": "semantic", "metadata": {"n": [{"m": value}]}}

    response = api.post("users/alice/memories", body, token=alice_token)

    assert response.status_code == 400, response.content
    assert error_code(response) == "metadata_out_of_range"
    assert memory_page(user=alice).documents == []


@pytest.mark.parametrize("value", [2**64, 10**30])
def test_an_integer_beyond_64_bits_in_catalog_metadata_is_a_400(api, acme, engine, value):
    token = tenant_token(acme, allow_catalog=True)

    response = api.put("catalog/k1", {"text": "x", "metadata": {"n": value}}, token=token)

    assert response.status_code == 400, response.content
    assert error_code(response) == "metadata_out_of_range"


@pytest.mark.django_db
@pytest.mark.parametrize("query", ["created_from=bad", "created_to=2024-13-45", "created_from=%00"])
def test_an_audit_export_with_a_bad_time_is_not_a_500(platform_client, acme, query):
    AuditEvent.objects.create(action="probe", tenant=acme)

    response = platform_client.get(reverse("admin:tenants_auditevent_export") + "?" + query)

    assert response.status_code in (200, 400), response.status_code
    if response.status_code == 200:
        assert not response["Content-Type"].startswith("text/csv")
        assert b"error" in response.content.lower() or b"invalid" in response.content.lower()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("page", "query"),
    [
        ("admin:tenants_user_changelist", "status=%00"),
        ("admin:tenants_user_changelist", "created_at__year=99999999999"),
        ("admin:tenants_auditevent_changelist", "created_at__year=99999999999"),
        ("admin:tenants_auditevent_changelist", "created_at__gte=%00"),
        ("admin:tenants_tenant_changelist", "id__exact=99999999999999999999999"),
        ("admin:tenants_auditevent_changelist", "created_at__range=0"),
        ("admin:tenants_auditevent_export", "created_at__range=0"),
        ("admin:tenants_auditevent_export", "created_at__year=99999999999"),
    ],
)
def test_a_hostile_changelist_filter_is_a_400(platform_client, acme, alice, page, query):
    response = platform_client.get(reverse(page) + "?" + query)

    assert response.status_code == 400 or response.status_code == 302, response.status_code


def test_a_cursor_the_api_returned_still_pages(api, acme, engine):
    token = tenant_token(acme, allow_catalog=True)
    for key in ("a1", "a2", "a3"):
        assert api.put(f"catalog/{key}", {"text": f"doc {key}"}, token=token).status_code == 200

    first = api.get("catalog?limit=2", token=token).json()
    second = api.get(f"catalog?limit=2&after={first['next']}", token=token).json()

    seen = [d["id"] for d in first["results"] + second["results"]]
    assert sorted(seen) == ["catalog:a1", "catalog:a2", "catalog:a3"]


@pytest.mark.usefixtures("store")
@pytest.mark.parametrize(("put_as", "delete_as"), [("k9", "catalog:k9"), ("catalog:k9", "k9")])
def test_catalog_put_and_delete_take_the_same_id_forms(api, acme, put_as, delete_as):
    token = tenant_token(acme, allow_catalog=True)

    put = api.put(f"catalog/{put_as}", {"text": "the k9 doc"}, token=token)
    again = api.put(f"catalog/{delete_as}", {"text": "the k9 doc, v2"}, token=token)
    listed = api.get("catalog", token=token).json()["results"]
    deleted = api.delete(f"catalog/{delete_as}", token=token)
    gone = api.delete(f"catalog/{put_as}", token=token)

    assert put.json()["id"] == again.json()["id"] == "catalog:k9"
    assert [(d["id"], d["text"]) for d in listed] == [("catalog:k9", "the k9 doc, v2")]
    assert deleted.status_code == 204 and gone.status_code == 404
