"""A forget request in a real browser, light and dark: a tenant admin picks memories in the
inspector and opens the request (reason, ticket) with the decision panel above its fields and a
dry run beside it; four eyes keep the approval from them; a second operator reviews the counts
and a sample and approves; a real Celery worker (real Redis) erases them from the real
cluster while the page follows by itself; the receipt shows its hash and signature and
downloads as signed JSON. An auditor sees the request without any decision button and is
refused when posting a decision anyway."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from erasure.models import ForgetRequest
from memory.services.common import backend
from memory.services.scoping import user_read_scope
from tenants.models import AuditEvent
from tenants.services.scoped_keys import scoped_key_provision

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
DONE_TIMEOUT_S = 90.0


def both_schemes(page: Any, shot: Any, name: str) -> None:
    """A screenshot in the light and the dark colour scheme (Django's admin follows it)."""
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        shot(page, f"{name}-{scheme}")
    page.emulate_media(color_scheme="light")


def test_a_tenant_admin_opens_and_a_second_operator_approves_a_forget_request(
    dls_acme, alice, bob, acme_admin, acme_auditor, platform_admin, signed_in, shot,
    seed_memories, erasure_worker,
):  # fmt: skip
    dls_acme.erasure_requires_second_operator = True  # four eyes, as a new tenant has it
    dls_acme.save()
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
    page.fill("#id_reason", "The subject asked us to forget where they live")
    page.fill("#id_ticket", "DPO-2026-17")
    both_schemes(page, shot, "forget-open")
    page.click("input[name=_save]")
    page.wait_for_selector("#forget-request-decisions")
    opened = ForgetRequest.objects.get(tenant=dls_acme, user=alice)
    assert opened.status == ForgetRequest.Status.PENDING and opened.ticket == "DPO-2026-17"

    # The opener: the decision panel first, a dry run, and no approve button (four eyes).
    decisions = page.locator("#forget-request-decisions").bounding_box()
    fields = page.locator("fieldset").first.bounding_box()
    assert decisions is not None and fields is not None and decisions["y"] < fields["y"]
    assert page.locator("input[name=approve]").count() == 0
    assert page.locator("#four-eyes-note").is_visible()
    assert "semantic\t2" in page.inner_text("#erasure-preview")
    both_schemes(page, shot, "forget-pending-opener")

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

    # A second operator reviews the dry run (counts, span, a sample of the texts) and
    # approves; the page then follows the worker by itself, no reload, until done.
    second = signed_in(platform_admin)
    second.goto(f"/admin/erasure/forgetrequest/{opened.pk}/change/")
    second.click("input[name=approve]")
    second.wait_for_selector("#approve-confirmation")
    preview = second.inner_text("#erasure-preview")
    assert "semantic\t2" in preview and "total\t2" in preview, preview
    assert seeded["old"].text in second.inner_text("#erasure-sample")
    assert kept["old"].text not in second.content()
    both_schemes(second, shot, "forget-confirm")
    second.click("input[name=approve]")
    second.wait_for_selector("#forget-request-progress")
    second.wait_for_function(
        "document.querySelector('#content-main') &&"
        " document.querySelector('#content-main').innerText.includes('Done')",
        timeout=DONE_TIMEOUT_S * 1000,
    )
    opened.refresh_from_db()
    assert opened.status == ForgetRequest.Status.DONE, opened.reason
    both_schemes(second, shot, "forget-done")
    second.click("text=View receipt")
    second.wait_for_selector("#receipt-json")
    receipt = json.loads(second.inner_text("#receipt-json"))
    assert sorted(id_ for ids in receipt_ids(receipt) for id_ in ids) == sorted(targets)
    assert receipt["ticket"] == "DPO-2026-17" and receipt["previewed_at_approval"]["total"] == 2
    assert "Verified: nothing matching remains" in second.inner_text("#content-main")
    assert len(second.inner_text("#receipt-hash")) == 64
    both_schemes(second, shot, "forget-receipt")
    with second.expect_download() as downloaded:
        second.click("#receipt-download")
    signed = json.loads(Path(downloaded.value.path()).read_text())
    assert signed["receipt"] == receipt and signed["signature"]["algorithm"] == "HMAC-SHA256"

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
