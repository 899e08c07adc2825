"""A forget request in a real browser, light and dark: a tenant admin picks memories in the
inspector and opens the request (reason, ticket) with the decision panel above its fields and a
dry run beside it; four eyes keep the approval from them; a second operator reviews the counts
and a sample and approves; a real Celery worker (real Redis) erases them from the real
cluster while the page follows by itself; the receipt shows its hash and signature and
downloads as signed JSON. An auditor sees the request without any decision button and is
refused when posting a decision anyway."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from erasure.models import ForgetRequest
from memory.services import bookkeeping
from memory.services.common import backend
from memory.services.scoping import user_read_scope
from memory.services.writes import memory_turn_record, memory_write
from tenants.models import AuditEvent, Operator, Tenant, User
from tenants.services.scoped_keys import scoped_key_provision
from tests.celery_worker import worker_database_url
from tests.conftest import _operator
from tests.erasure.conftest import ROOT

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


def test_a_query_scoped_request_is_previewed_approved_by_a_second_operator_and_its_receipt_verifies(
    backend_worker, settings, signed_in, shot, tmp_path
):  # fmt: skip
    """Issue 34, stories 2-4 on both backends with a real worker (``backend_worker``: the
    embedded store and the real cluster): a new tenant has four eyes; the open form will not
    go without a reason and a ticket; the opener gets the dry run but no approval; the second
    operator's preview is refreshed when the data changed; the page follows the job by itself;
    the downloaded receipt verifies with ``manage.py receipt_verify`` and a tampered copy does
    not."""
    tenant = Tenant.objects.create(slug="initech", name="Initech")  # a new tenant: four eyes
    assert tenant.erasure_requires_second_operator is True
    alice = User.objects.create(tenant=tenant, external_id="alice")
    bob = User.objects.create(tenant=tenant, external_id="bob")
    matching = [
        memory_write(
            user=alice, text=f"Alice moved to Baker Street, flat {n}", memory_type="semantic"
        )
        for n in range(2)
    ]
    matching.append(memory_turn_record(user=alice, text="I live on Baker St, flat 2").episode)
    kept = memory_write(user=alice, text="Alice likes green tea", memory_type="semantic")
    bobs = memory_write(user=bob, text="Bob lives on Baker St", memory_type="semantic")
    bookkeeping.drain()
    opener = signed_in(_operator("initech-admin", Operator.Role.TENANT_ADMIN, tenant))
    approver = signed_in(_operator("second-admin", Operator.Role.PLATFORM_ADMIN, None))
    backend_worker.start()

    # The open form: the query, and no request without a reason and a ticket.
    opener.goto(f"/admin/erasure/forgetrequest/add/?user={alice.pk}")
    opener.select_option("#id_scope_kind", "query")
    opener.fill("#id_query", "baker st")
    opener.click("input[name=_save]")
    for field in ("#id_reason", "#id_ticket"):
        assert opener.locator(field).evaluate("f => f.required && !f.validity.valid")
    assert ForgetRequest.objects.count() == 0  # the browser kept the form
    opener.fill("#id_reason", "Subject access request by mail")
    opener.fill("#id_ticket", "DPO-42")
    both_schemes(opener, shot, "query-open")
    opener.click("input[name=_save]")
    opener.wait_for_selector("#forget-request-preview")
    request = ForgetRequest.objects.get(user=alice)
    assert request.scope == "query" and request.ticket == "DPO-42"

    # The opener: a dry run (counts per type, the span, a sample), never the approve action.
    preview = opener.inner_text("#erasure-preview")
    for line in ("semantic\t2", "episodic\t1", "total\t3"):
        assert line in preview, preview
    assert "Stored between" in opener.inner_text("#erasure-span")
    assert "Baker St, flat 2" in opener.inner_text("#erasure-sample")
    assert opener.locator("input[name=approve]").count() == 0
    assert opener.locator("#four-eyes-note").is_visible()
    both_schemes(opener, shot, "query-pending-opener")

    # The second operator reviews; the data changes before they confirm: the new preview.
    approver.goto(f"/admin/erasure/forgetrequest/{request.pk}/change/")
    approver.click("input[name=approve]")
    approver.wait_for_selector("#approve-confirmation")
    assert approver.input_value("#approve-confirmation input[name=approve]") == "Yes, erase these 3"
    assert bobs.text not in approver.content()  # Bob's memory is not in Alice's preview
    late = memory_write(user=alice, text="Alice's Baker St key code", memory_type="semantic")
    bookkeeping.drain()
    approver.click("#approve-confirmation input[name=approve]")
    approver.wait_for_selector("text=changed since the preview")
    assert approver.input_value("#approve-confirmation input[name=approve]") == "Yes, erase these 4"
    assert late.text in approver.inner_text("#erasure-sample")
    request.refresh_from_db()
    assert request.status == ForgetRequest.Status.PENDING  # nothing approved blind
    both_schemes(approver, shot, "query-preview-refreshed")
    approver.click("#approve-confirmation input[name=approve]")

    # The page follows the job by itself (no reload by the test) until it is done.
    approver.wait_for_selector("#forget-request-progress")
    approver.wait_for_function(
        "document.querySelector('#content-main') &&"
        " document.querySelector('#content-main').innerText.includes('Done')",
        timeout=DONE_TIMEOUT_S * 1000,
    )
    request.refresh_from_db()
    assert request.status == ForgetRequest.Status.DONE, backend_worker.output()[-3000:]
    assert request.query == ""  # wiped once resolved; the receipt keeps its hash
    both_schemes(approver, shot, "query-done")

    # The receipt as a document: a printable page and signed JSON, ids and hashes, no text.
    approver.click("text=View receipt")
    approver.wait_for_selector("#receipt-json")
    assert approver.locator("#receipt-document").is_visible()
    approver.emulate_media(media="print")
    assert not approver.locator(".receipt-actions").is_visible()  # printed: the document only
    approver.emulate_media(media="screen")
    both_schemes(approver, shot, "query-receipt")
    with approver.expect_download() as downloaded:
        approver.click("#receipt-download")
    assert downloaded.value.suggested_filename == f"atlas-erasure-receipt-{request.pk}.json"
    good = tmp_path / downloaded.value.suggested_filename
    downloaded.value.save_as(good)
    text = good.read_text()
    assert "Baker" not in text and "baker" not in text
    document = json.loads(text)
    receipt = document["receipt"]
    assert receipt["previewed_at_open"]["total"] == 3 and receipt["total_deleted"] == 4
    assert receipt["previewed_at_approval"]["total"] == 4 and len(receipt["query_sha256"]) == 64
    assert receipt["previewed_at_approval"]["ids_sha256"] == receipt["erased_ids_sha256"]

    # The documented command: the downloaded file verifies, a tampered copy is refused.
    verified = receipt_verify_command(good, settings)
    assert verified.returncode == 0, verified.stderr
    assert verified.stdout.startswith(f"VALID: receipt of forget request {request.pk}")
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(dict(document, receipt={**receipt, "total_deleted": 3})))
    refused = receipt_verify_command(tampered, settings)
    assert refused.returncode == 1 and "INVALID: The content hash does not match" in refused.stderr
    other_key = receipt_verify_command(good, settings, key="another deployment's key")
    assert other_key.returncode == 1 and "INVALID: Signed under another key" in other_key.stderr

    # Exactly what was approved is gone; the rest of Alice's and all of Bob's stay.
    store = backend()
    assert store.get_many(user_read_scope(alice), [m.id for m in [*matching, late]]) == []
    assert store.get(user_read_scope(alice), kept.id) is not None
    assert store.get(user_read_scope(bob), bobs.id) is not None


def receipt_verify_command(
    path: Path, settings: Any, key: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``python manage.py receipt_verify FILE`` as an operator runs it, under this deployment's
    receipt key (or ``key``)."""
    env = {
        **os.environ,
        "DATABASE_URL": worker_database_url(),  # this deployment: its database, its cluster
        "ATLAS_DEPLOYMENT_ID": settings.ATLAS_DEPLOYMENT_ID,
        "ATLAS_MEMORY_BACKEND": settings.ATLAS_MEMORY_BACKEND,
        "ATLAS_ES_URL": settings.ATLAS_ES_URL,
        "ATLAS_ES_INDEX_PREFIX": settings.ATLAS_ES_INDEX_PREFIX,
        "ATLAS_EMBEDDED_PATH": settings.ATLAS_EMBEDDED_PATH,
        "ATLAS_RECEIPT_KEY": key or settings.ATLAS_RECEIPT_KEY,
    }
    return subprocess.run(  # noqa: S603 - fixed argv
        [sys.executable, "manage.py", "receipt_verify", str(path)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
