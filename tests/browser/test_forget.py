"""A forget request in a real browser: a tenant admin picks memories in the inspector, opens the
request, approves it, and a real Celery worker (real Redis) erases them from the real cluster;
the request ends done with a receipt. An auditor sees the request without any decision button
and is refused when posting a decision anyway."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from erasure.models import ForgetRequest
from memory.services.common import backend
from memory.services.scoping import user_read_scope
from tenants.models import AuditEvent
from tenants.services.scoped_keys import scoped_key_provision

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
DONE_TIMEOUT_S = 90.0


def test_a_tenant_admin_opens_and_approves_a_forget_request_and_reads_its_receipt(
    dls_acme, alice, bob, acme_admin, acme_auditor, signed_in, shot, seed_memories, erasure_worker
):
    scoped_key_provision(user=alice)
    scoped_key_provision(user=bob)
    seeded = seed_memories(alice)
    kept = seed_memories(bob)
    erasure_worker.start()
    page = signed_in(acme_admin)

    # Pick the superseded fact and its successor in the inspector; forget them.
    page.goto(f"/admin/tenants/user/{alice.pk}/memories/?type=semantic")
    page.wait_for_selector("#memory-table")
    targets = [seeded["old"].id, seeded["new"].id]
    for memory_id in targets:
        page.check(f"input[name=ids][value='{memory_id}']")
    page.click("#forget-selected")
    page.wait_for_selector("#id_memory_ids")
    assert sorted(page.input_value("#id_memory_ids").split()) == sorted(targets)
    shot(page, "forget-open")
    page.click("input[name=_save]")
    page.wait_for_selector("#forget-request-decisions")
    opened = ForgetRequest.objects.get(tenant=dls_acme, user=alice)
    assert opened.status == ForgetRequest.Status.PENDING

    # The auditor sees it, without decisions, and cannot decide by posting.
    auditor = signed_in(acme_auditor)
    auditor.goto(f"/admin/erasure/forgetrequest/{opened.pk}/change/")
    assert auditor.locator("#forget-request-decisions, input[name=approve]").count() == 0
    shot(auditor, "forget-auditor")
    token = next(c["value"] for c in auditor.context.cookies() if c["name"] == "csrftoken")
    refused = auditor.request.post(
        f"/admin/erasure/forgetrequest/{opened.pk}/approve/",
        headers={"X-CSRFToken": token, "Referer": auditor.url},
    )
    assert refused.status == 403 and "CSRF" not in refused.text()
    opened.refresh_from_db()
    assert opened.status == ForgetRequest.Status.PENDING

    # Approve: a confirmation page counts what goes (per index, no texts), then the worker
    # erases; the page shows done, then the receipt.
    page.click("input[name=approve]")
    page.wait_for_selector("#approve-confirmation")
    preview = page.inner_text("#erasure-preview")
    assert "semantic\t2" in preview and "total\t2" in preview, preview
    assert seeded["old"].text not in page.content()
    shot(page, "forget-confirm")
    page.click("input[name=approve]")
    deadline = time.monotonic() + DONE_TIMEOUT_S
    while opened.status not in (ForgetRequest.Status.DONE, ForgetRequest.Status.FAILED):
        assert time.monotonic() < deadline, f"still {opened.status}:\n{erasure_worker.output()}"
        time.sleep(0.5)
        opened.refresh_from_db()
    assert opened.status == ForgetRequest.Status.DONE, opened.reason
    page.goto(f"/admin/erasure/forgetrequest/{opened.pk}/change/")
    assert "Done" in page.inner_text("#content-main")
    shot(page, "forget-done")
    page.click("text=View receipt")
    page.wait_for_selector("#receipt-json")
    receipt = json.loads(page.inner_text("#receipt-json"))
    assert sorted(id_ for ids in receipt_ids(receipt) for id_ in ids) == sorted(targets)
    assert "Verified: nothing matching remains" in page.inner_text("#content-main")
    shot(page, "forget-receipt")

    # Gone from the cluster; Bob's and the rest of Alice's memories are untouched.
    store = backend()
    assert store.get_many(user_read_scope(alice), targets) == []
    assert store.get(user_read_scope(alice), seeded["playbook"].id) is not None
    assert store.get(user_read_scope(bob), kept["old"].id) is not None
    texts = [seeded["old"].text, seeded["new"].text]
    for event in AuditEvent.objects.filter(tenant=dls_acme):
        assert not any(text in json.dumps(event.metadata) for text in texts)


def receipt_ids(receipt: dict[str, Any]) -> list[list[str]]:
    """The erased ids per index, from the receipt's JSON."""
    return [part.get("ids", []) for part in receipt["indices"].values()]
