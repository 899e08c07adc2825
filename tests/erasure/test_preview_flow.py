"""Preview, then approve, end to end with a real Celery worker on both backends: an operator
opens a query-scoped request (reason and ticket), four eyes keep them from approving it, a
second operator sees the dry run (counts, sample, span), is shown a fresh one when the data
changed, approves; the worker erases exactly what was approved; the signed receipt is
downloaded and verified by ``manage.py receipt_verify``; a tampered copy is refused."""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from erasure.models import ForgetRequest
from memory.services.common import backend
from memory.services.scoping import user_read_scope
from memory.services.writes import memory_turn_record, memory_write
from tenants.models import AuditEvent, Operator, Tenant, User
from tenants.services.audit import query_digest
from tests.conftest import _operator, login

pytestmark = pytest.mark.django_db(transaction=True)
DONE_TIMEOUT_S = 90.0


def url(name: str, pk: int) -> str:
    return reverse(f"admin:erasure_forgetrequest_{name}", args=[pk])


def fingerprint(page: str) -> str:
    found = re.search(r'name="preview" value="([0-9a-f]{64})"', page)
    assert found is not None, page
    return found[1]


def test_preview_then_approve_erases_what_was_approved_and_the_receipt_verifies(
    backend_worker, tmp_path, capsys
):
    tenant = Tenant.objects.create(slug="initech", name="Initech")  # the default: four eyes
    assert tenant.erasure_requires_second_operator is True
    alice = User.objects.create(tenant=tenant, external_id="alice")
    bob = User.objects.create(tenant=tenant, external_id="bob")
    matching = [
        memory_write(
            user=alice, text=f"Alice moved to Baker Street, flat {n}", memory_type="semantic"
        )
        for n in range(2)
    ]
    matching.append(memory_turn_record(user=alice, text="I live on Baker Street, flat 2").episode)
    kept = memory_write(user=alice, text="Alice likes green tea", memory_type="semantic")
    bobs = memory_write(user=bob, text="Bob lives on Baker Street", memory_type="semantic")
    opener = login(_operator("initech-admin", Operator.Role.TENANT_ADMIN, tenant))
    approver = login(_operator("second-admin", Operator.Role.PLATFORM_ADMIN, None))
    backend_worker.start()

    # Opening needs a reason and a ticket; its dry run is kept (counts, never text).
    opened = opener.post(
        reverse("admin:erasure_forgetrequest_add"),
        {"user": alice.pk, "scope_kind": "query", "query": "baker street",
         "reason": "Subject access request by mail", "ticket": "DPO-42"},
    )  # fmt: skip
    assert opened.status_code == 302, opened.content.decode()[-2000:]
    request = ForgetRequest.objects.get(user=alice)
    assert request.preview_at_open is not None
    assert request.preview_at_open["counts"] == {"episodic": 1, "semantic": 2, "procedural": 0}
    assert "Baker" not in json.dumps(request.preview_at_open)

    # The opener is never offered the approval; forcing it is refused and audited.
    own = opener.get(url("change", request.pk)).content.decode()
    assert "Review and approve" not in own and "Alice moved to Baker Street" in own  # dry run
    opener.post(url("approve", request.pk), {"confirm": "yes", "preview": "0" * 64})
    request.refresh_from_db()
    assert request.status == "pending"
    assert AuditEvent.objects.filter(action="refused.approve_own_request").count() == 1

    # The second operator reviews; the data changes before they confirm: a fresh preview.
    review = approver.get(url("approve", request.pk)).content.decode()
    assert "Yes, erase these 3" in review and "flat 2" in review and "Bob" not in review
    late = memory_write(user=alice, text="Alice's Baker Street key code", memory_type="semantic")
    stale = approver.post(
        url("approve", request.pk), {"confirm": "yes", "preview": fingerprint(review)}
    )
    request.refresh_from_db()
    assert stale.status_code == 200 and request.status == "pending"
    fresh = stale.content.decode()
    assert "changed since the preview" in fresh and "Yes, erase these 4" in fresh
    approver.post(url("approve", request.pk), {"confirm": "yes", "preview": fingerprint(fresh)})
    request.refresh_from_db()
    assert request.status in ("approved", "running", "done") and request.query == ""

    deadline = time.monotonic() + DONE_TIMEOUT_S
    while request.status not in ("done", "failed"):
        assert time.monotonic() < deadline, f"still {request.status}:\n{backend_worker.output()}"
        time.sleep(0.3)
        request.refresh_from_db()
    assert request.status == "done", request.reason

    store = backend()
    targets = [m.id for m in matching] + [late.id]
    assert store.get_many(user_read_scope(alice), targets) == []
    assert store.get(user_read_scope(alice), kept.id) is not None
    assert store.get(user_read_scope(bob), bobs.id) is not None

    # The receipt: what was previewed and what was erased, ids and hashes, never text.
    download = approver.get(url("receipt_json", request.pk))
    assert download["Content-Disposition"] == (
        f'attachment; filename="atlas-erasure-receipt-{request.pk}.json"'
    )
    document = json.loads(download.content)
    receipt = document["receipt"]
    assert receipt["previewed_at_open"]["total"] == 3
    assert receipt["previewed_at_approval"]["total"] == 4 and receipt["total_deleted"] == 4
    assert receipt["previewed_at_approval"]["ids_sha256"] == receipt["erased_ids_sha256"]
    # The query's trace is the audit trail's digest of the same search: one can be checked
    # against the other.
    assert receipt["ticket"] == "DPO-42" and receipt["query_sha256"] == query_digest(
        " Baker  STREET"
    )
    assert "Baker" not in download.content.decode() and "baker" not in download.content.decode()

    good = tmp_path / "receipt.json"
    good.write_bytes(download.content)
    call_command("receipt_verify", str(good))
    assert capsys.readouterr().out.startswith(f"VALID: receipt of forget request {request.pk}")

    tampered = dict(document, receipt={**receipt, "total_deleted": 3})
    bad = tmp_path / "tampered.json"
    bad.write_text(json.dumps(tampered))
    with pytest.raises(CommandError, match="INVALID: The content hash does not match"):
        call_command("receipt_verify", str(bad))
    rehashed = dict(tampered, content_sha256=_sha256_of(tampered["receipt"]))
    bad.write_text(json.dumps(rehashed))
    with pytest.raises(CommandError, match="INVALID: The signature does not match"):
        call_command("receipt_verify", str(bad))


def _sha256_of(receipt: dict[str, Any]) -> str:
    import hashlib

    from erasure.services.receipts import canonical

    return hashlib.sha256(canonical(receipt)).hexdigest()
