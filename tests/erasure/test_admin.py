"""The forget-request admin: scoping, the prefilled form, decisions by role, the receipt."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from erasure.admin import forget_request_form_url
from erasure.models import ForgetRequest
from erasure.services import forget_request_execute, forget_request_open
from memory.services.writes import memory_write
from tenants.models import AuditEvent
from tests.erasure.test_services import op

pytestmark = pytest.mark.usefixtures("store")

CHANGELIST = "admin:erasure_forgetrequest_changelist"


def url(name: str, pk: int) -> str:
    return reverse(f"admin:erasure_forgetrequest_{name}", args=[pk])


def approve(client, pk: int, **extra):
    """What an approver does: look at the preview, confirm what it showed."""
    page = client.get(url("approve", pk)).content.decode()
    seen = re.search(r'name="preview" value="([0-9a-f]{64})"', page)
    assert seen is not None, page
    return client.post(url("approve", pk), {"confirm": "yes", "preview": seen[1]}, **extra)


FORM = {"reason": "the subject asked by mail", "ticket": "DPO-7"}


@pytest.fixture
def requests(alice, charlie, acme_admin, globex_admin):
    return {
        "acme": forget_request_open(
            reason="the subject asked", ticket="DPO-1", user=alice, scope="user", by=op(acme_admin)
        ),
        "globex": forget_request_open(
            reason="the subject asked",
            ticket="DPO-1",
            user=charlie,
            scope="user",
            by=op(globex_admin),
        ),
    }


def test_the_list_shows_only_the_operators_tenant(requests, acme_client, platform_client):
    page = acme_client.get(reverse(CHANGELIST), {"status__exact": "pending"}).content.decode()
    everything = platform_client.get(reverse(CHANGELIST)).content.decode()

    assert "alice" in page and "charlie" not in page and "Globex" not in page
    assert "alice" in everything and "charlie" in everything


def test_the_form_opens_a_request_prefilled_from_a_link(alice, acme_client):
    link = forget_request_form_url(user_pk=alice.pk, memory_ids=["m1", "m2"])

    form = acme_client.get(link)
    posted = acme_client.post(
        reverse("admin:erasure_forgetrequest_add"),
        {"user": alice.pk, "scope_kind": "ids", "memory_ids": "m1, m2\nm3", **FORM},
    )

    assert form.status_code == 200
    html = form.content.decode()
    assert f'<option value="{alice.pk}" selected>' in html and "m1\nm2" in html
    request = ForgetRequest.objects.get()
    assert posted.status_code == 302 and request.memory_ids == ["m1", "m2", "m3"]
    assert request.requested_by_label == "acme-admin" and request.status == "pending"
    assert (request.justification, request.ticket) == (FORM["reason"], FORM["ticket"])
    assert (request.preview_at_open or {}).get("total") == 0  # m1..m3 match nothing stored


def test_the_form_refuses_another_tenants_user(charlie, acme_client):
    response = acme_client.post(
        reverse("admin:erasure_forgetrequest_add"), {"user": charlie.pk, "scope_kind": "user"}
    )

    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    assert not ForgetRequest.objects.exists()


def test_the_form_shows_service_errors(alice, acme_client):
    response = acme_client.post(
        reverse("admin:erasure_forgetrequest_add"),
        {"user": alice.pk, "scope_kind": "query", **FORM},
    )
    bare = acme_client.post(
        reverse("admin:erasure_forgetrequest_add"), {"user": alice.pk, "scope_kind": "user"}
    )

    assert "A query scope needs a query." in response.content.decode()
    assert bare.status_code == 200 and "This field is required" in bare.content.decode()
    assert not ForgetRequest.objects.exists()


def test_an_admin_approves_and_the_job_is_queued(
    requests, acme_client, django_capture_on_commit_callbacks
):
    pending = requests["acme"]
    page = acme_client.get(url("change", pending.pk)).content.decode()
    confirm = acme_client.get(url("approve", pending.pk))
    unconfirmed = acme_client.post(url("approve", pending.pk))  # no confirm: the page again
    pending.refresh_from_db()
    assert unconfirmed.status_code == 200 and pending.status == "pending"

    with django_capture_on_commit_callbacks() as queued:
        response = approve(acme_client, pending.pk)

    assert "Review and approve" in page and "Reject" in page
    # The decision comes before the request's fields, not below the page's Close button.
    assert page.index('id="forget-request-decisions"') < page.index("Requested by:")
    assert "Requested by:" in page and "Requested by label" not in page
    assert confirm.status_code == 200 and "Yes, erase these 0" in confirm.content.decode()
    crumbs = re.search(r'<div class="breadcrumbs">(.*?)</div>', confirm.content.decode(), re.S)
    assert crumbs and re.findall(r">([^<>]+)</a>", crumbs[1]) == [
        "Home", "Erasure", "Forget requests", f"Request {pending.pk}"
    ]  # fmt: skip
    assert response.status_code == 302 and len(queued) == 1
    pending.refresh_from_db()
    assert pending.status == "approved" and pending.approver_label == "acme-admin"


def test_the_confirmation_counts_what_would_be_erased_per_index_without_texts(
    alice, bob, acme_admin, acme_client
):
    facts = [
        memory_write(user=alice, text=f"Alice's secret number {n}", memory_type="semantic")
        for n in range(3)
    ]
    memory_write(user=alice, text="Alice's other secret", memory_type="semantic")
    memory_write(user=bob, text="Bob's secret", memory_type="semantic")
    chosen = forget_request_open(
        reason="the subject asked",
        ticket="DPO-1",
        user=alice,
        scope="ids",
        memory_ids=[f.id for f in facts[:2]],
        by=op(acme_admin),
    )
    whole = forget_request_open(
        reason="the subject asked", ticket="DPO-1", user=alice, scope="user", by=op(acme_admin)
    )

    ids_page = acme_client.get(url("approve", chosen.pk)).content.decode()
    user_page = acme_client.get(url("approve", whole.pk)).content.decode()

    table = ids_page[ids_page.index('id="erasure-preview"') :]
    assert '<td>semantic</td><td class="count">2</td>' in table
    assert '<td>episodic</td><td class="count">0</td>' in table
    assert '<td>semantic</td><td class="count">4</td>' in user_page  # Bob's not counted
    # A bounded sample of the texts for the approver (who may read them), Bob's never.
    sample = ids_page[ids_page.index('id="erasure-sample"') :]
    assert "Alice&#x27;s secret number 1" in sample and "secret number 0" in sample
    assert "other secret" not in sample and "Bob" not in user_page
    assert "Stored between" in ids_page


def test_a_tenant_with_four_eyes_needs_a_second_operator(alice, acme, acme_admin, acme_client):
    from tenants.models import Operator
    from tests.conftest import _operator, login

    acme.erasure_requires_second_operator = True
    acme.save()
    opened = forget_request_open(
        reason="the subject asked", ticket="DPO-1", user=alice, scope="user", by=op(acme_admin)
    )

    page = acme_client.get(url("change", opened.pk)).content.decode()
    own = acme_client.post(url("approve", opened.pk), {"confirm": "yes"}, follow=True)
    opened.refresh_from_db()
    assert opened.status == "pending"
    # Never offered to the opener; forced anyway, refused and the refusal audited.
    assert "Review and approve" not in page and 'id="four-eyes-note"' in page
    assert "the one who opened a forget request cannot approve it" in own.content.decode()
    refused = AuditEvent.objects.get(action="refused.approve_own_request")
    assert refused.actor_label == "acme-admin" and refused.target_id == str(opened.pk)

    second = _operator("acme-second", Operator.Role.TENANT_ADMIN, acme)
    approve(login(second), opened.pk)
    opened.refresh_from_db()
    assert opened.status == "approved" and opened.approver_label.startswith("acme-second")


def test_without_four_eyes_the_opener_may_approve(alice, acme_admin, acme_client):
    opened = forget_request_open(
        reason="the subject asked", ticket="DPO-1", user=alice, scope="user", by=op(acme_admin)
    )

    approve(acme_client, opened.pk)

    opened.refresh_from_db()
    assert opened.status == "approved"


def test_an_admin_rejects_with_a_reason(requests, acme_client):
    pending = requests["acme"]

    empty = acme_client.post(url("reject", pending.pk), {"reason": ""})
    pending.refresh_from_db()
    assert empty.status_code == 302 and pending.status == "pending"
    acme_client.post(url("reject", pending.pk), {"reason": "not the data subject"})

    pending.refresh_from_db()
    assert (pending.status, pending.reason) == ("rejected", "not the data subject")


def test_auditors_see_no_buttons_and_get_403_when_posting(requests, auditor_client):
    pending = requests["acme"]
    page = auditor_client.get(url("change", pending.pk))

    assert page.status_code == 200 and "Review and approve" not in page.content.decode()
    for name in ("approve", "reject", "retry"):
        assert auditor_client.post(url(name, pending.pk), {"reason": "x"}).status_code == 403
    assert auditor_client.get(reverse("admin:erasure_forgetrequest_add")).status_code == 403
    pending.refresh_from_db()
    assert pending.status == "pending"


def test_another_tenants_request_cannot_be_seen_or_decided(requests, acme_client):
    foreign = requests["globex"]

    assert acme_client.get(url("change", foreign.pk)).status_code == 404
    for name in ("approve", "reject", "retry", "receipt"):
        assert acme_client.post(url(name, foreign.pk), {"reason": "x"}).status_code == 404
    foreign.refresh_from_db()
    assert foreign.status == "pending"


def test_decisions_need_a_confirmed_post(requests, acme_client):
    pending = requests["acme"]

    assert acme_client.get(url("approve", pending.pk)).status_code == 200  # the confirmation
    assert acme_client.get(url("approve", pending.pk), {"confirm": "yes"}).status_code == 200
    assert acme_client.get(url("reject", pending.pk)).status_code == 405
    pending.refresh_from_db()
    assert pending.status == "pending"


def test_a_failed_request_is_retried_by_the_list_action(
    requests, acme_client, django_capture_on_commit_callbacks
):
    failed = requests["acme"]
    ForgetRequest.objects.filter(pk=failed.pk).update(status="failed", reason="store down")

    with django_capture_on_commit_callbacks() as queued:
        acme_client.post(
            reverse(CHANGELIST),
            {"action": "retry_failed", "_selected_action": [failed.pk, requests["globex"].pk]},
        )

    failed.refresh_from_db()
    assert failed.status == "approved" and failed.retry_count == 1 and len(queued) == 1
    assert ForgetRequest.objects.get(pk=requests["globex"].pk).status == "pending"


def test_the_receipt_page_shows_counts_and_ids_only(
    alice, acme_admin, acme_client, django_capture_on_commit_callbacks
):
    fact = memory_write(user=alice, text="Alice's cat is called Whiskers", memory_type="semantic")
    request = forget_request_open(
        reason="the subject asked",
        ticket="DPO-1",
        user=alice,
        scope="ids",
        memory_ids=[fact.id],
        by=op(acme_admin),
    )
    with django_capture_on_commit_callbacks():
        approve(acme_client, request.pk)
    forget_request_execute(request_id=request.pk)

    detail = acme_client.get(url("change", request.pk)).content.decode()
    receipt = acme_client.get(url("receipt", request.pk))

    assert "View receipt" in detail
    assert receipt.status_code == 200
    assert fact.id in receipt.content.decode() and "Whiskers" not in receipt.content.decode()
    # The user by the id the operator knows, not by a key of Atlas's own.
    assert "user <strong>alice</strong> of Acme." in receipt.content.decode()
    assert "Download signed JSON" in detail and "receipt_verify" in receipt.content.decode()


def test_progress_per_index_shows_once_the_job_has_started(
    alice, acme_admin, acme_client, django_capture_on_commit_callbacks
):
    memory_write(user=alice, text="Alice's dog is called Rex", memory_type="semantic")
    request = forget_request_open(
        reason="the subject asked", ticket="DPO-1", user=alice, scope="user", by=op(acme_admin)
    )
    pending = acme_client.get(url("change", request.pk)).content.decode()
    with django_capture_on_commit_callbacks():
        approve(acme_client, request.pk)
    queued = acme_client.get(url("change", request.pk)).content.decode()
    polled = acme_client.get(url("progress", request.pk)).json()
    forget_request_execute(request_id=request.pk)

    done = acme_client.get(url("change", request.pk)).content.decode()
    after = acme_client.get(url("progress", request.pk)).json()

    # Before the job: no empty progress box; queued: the box polls its JSON by itself; done:
    # a row per memory type with its count, and no more polling.
    assert 'id="forget-request-progress"' not in pending
    assert 'id="forget-request-progress"' in queued and "Updates by itself" in queued
    assert polled == {"status": "approved", "status_display": "Approved (queued)", "indices": []}
    assert 'id="forget-request-progress"' in done and "Updates by itself" not in done
    semantic = next(i for i in after["indices"] if i["kind"] == "semantic")
    assert after["status"] == "done" and semantic["deleted"] == 1 and semantic["remaining"] == 0
