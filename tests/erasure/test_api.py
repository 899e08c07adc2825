"""``/api/v1/users/{user_id}/forget-requests``: open and read, and every refusal."""

from __future__ import annotations

import pytest

from erasure.models import ForgetRequest
from erasure.services import forget_request_approve, forget_request_execute
from memory.services.writes import memory_write
from tenants.models import AuditEvent
from tests.atlas_server.conftest import error_code, tenant_token, user_token
from tests.erasure.test_services import op

pytestmark = pytest.mark.usefixtures("store")


def test_a_user_token_opens_and_reads_its_own_request(api, alice):
    token = user_token(alice)

    opened = api.post(
        "users/alice/forget-requests",
        {"scope": "query", "query": "my street name"},
        token=token,
    )
    read = api.get(f"users/alice/forget-requests/{opened.json()['id']}", token=token)

    assert opened.status_code == 201
    body = opened.json()
    assert body["status"] == "pending" and body["scope"] == "query"
    assert "my street name" not in opened.content.decode()  # the query is never echoed
    assert read.status_code == 200 and read.json() == body
    request = ForgetRequest.objects.get()
    assert request.requested_by_type == "token" and request.user == alice
    assert AuditEvent.objects.filter(action="forget_request.open").count() == 1


def test_a_token_may_give_a_reason_and_a_ticket_and_reads_them_back(api, alice):
    opened = api.post(
        "users/alice/forget-requests",
        {"scope": "user", "reason": "account closed", "ticket": "CRM-981"},
        token=tenant_token(alice.tenant),
    )

    assert opened.status_code == 201, opened.content
    body = opened.json()
    assert (body["requested_because"], body["ticket"]) == ("account closed", "CRM-981")
    assert (ForgetRequest.objects.get().preview_at_open or {}).get("total") == 0


def test_the_receipt_is_readable_once_the_job_is_done(
    api, alice, acme_admin, django_capture_on_commit_callbacks
):
    token = tenant_token(alice.tenant)
    fact = memory_write(user=alice, text="Alice's bank is Foo", memory_type="semantic")
    opened = api.post(
        "users/alice/forget-requests", {"scope": "ids", "memory_ids": [fact.id]}, token=token
    ).json()
    request = ForgetRequest.objects.get(pk=opened["id"])
    with django_capture_on_commit_callbacks():
        forget_request_approve(request=request, by=op(acme_admin))
    forget_request_execute(request_id=request.pk)

    body = api.get(f"users/alice/forget-requests/{request.pk}", token=token).json()

    assert body["status"] == "done" and body["verified"] is True
    assert body["receipt"]["indices"]["semantic"] == {
        "deleted": 1,
        "remaining": 0,
        "ids": [fact.id],
    }
    assert {p["index"]: p["deleted"] for p in body["progress"]}["semantic"] == 1
    assert "Foo" not in str(body)


def test_another_users_request_is_not_found(api, alice, bob):
    theirs = api.post("users/bob/forget-requests", {"scope": "user"}, token=user_token(bob))

    response = api.get(
        f"users/alice/forget-requests/{theirs.json()['id']}", token=user_token(alice)
    )

    assert response.status_code == 404 and error_code(response) == "forget_request_not_found"


def test_a_tenant_token_cannot_open_one_for_another_tenants_user(api, acme, charlie):
    response = api.post(
        "users/charlie/forget-requests", {"scope": "user"}, token=tenant_token(acme)
    )

    assert response.status_code == 404 and error_code(response) == "user_not_found"
    assert not ForgetRequest.objects.exists()


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"scope": "all"},
        {"scope": "ids"},
        {"scope": "ids", "memory_ids": "abc"},
        {"scope": "ids", "memory_ids": [5]},
        {"scope": "query", "query": ""},
        {"scope": "query", "query": 5},
        {"scope": "query", "query": "q" * 501},
        {"scope": "ids", "memory_ids": ["a"], "delete_user_record": True},
    ],
)
def test_bad_input_gets_a_400_and_writes_nothing(api, alice, body):
    response = api.post("users/alice/forget-requests", body, token=user_token(alice))

    assert response.status_code == 400 and "error" in response.json()
    assert not ForgetRequest.objects.exists()
