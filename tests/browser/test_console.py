"""The operator console in a real browser, as a tenant admin and as an auditor.

Memories live on the real cluster with isolation enforced by it (dls); screenshots of the main
pages are saved as test artifacts.
"""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime

import pytest

from tenants.models import AuditEvent, ScopedKey, User

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_tenant_admin_onboards_rotates_inspects_audits_and_watches(
    dls_acme, acme_admin, signed_in, shot, seed_memories
):
    page = signed_in(acme_admin)

    # Onboard a user (their scoped key is provisioned with them).
    page.goto("/admin/tenants/user/add/")
    assert page.inner_text("#fixed-tenant") == "Acme"  # their one tenant: nothing to pick
    page.fill("#id_external_id", "dana")
    page.click("input[name=_save]")
    page.wait_for_selector("text=Added user dana.")
    dana = User.objects.get(tenant=dls_acme, external_id="dana")
    first_key = dana.current_key()
    assert first_key is not None

    # Rotate their key from the users list.
    page.goto("/admin/tenants/user/")
    page.check(f"input[name=_selected_action][value='{dana.pk}']")
    page.select_option("select[name=action]", "rotate_key")
    page.click("button[name=index]")
    page.wait_for_selector("text=Rotated keys of: dana.")
    new_key = dana.current_key()
    assert new_key is not None and new_key.rotated_from_id == first_key.pk
    assert ScopedKey.objects.get(pk=first_key.pk).status != ScopedKey.Status.ACTIVE
    shot(page, "users")

    # Inspect their memory, read with the rotated key.
    seeded = seed_memories(dana)
    page.goto(f"/admin/tenants/user/{dana.pk}/change/")
    page.click("text=memories by type")
    page.wait_for_selector("#memory-table")
    assert page.locator("tr.memory-row").count() == 5
    assert "superseded" in page.inner_text(f"tr[data-id='{seeded['old'].id}']")
    page.select_option("select[name=type]", "semantic")
    page.select_option("select[name=superseded]", "current")
    page.click("#memory-filters input[type=submit]")
    page.wait_for_selector("#memory-table")
    assert page.locator("tr.memory-row").count() == 1
    assert "dana lives in Edinburgh" in page.inner_text("#memory-table")
    shot(page, "inspector-memories")

    # Search: a real recall as dana, showing legs, ranks, scores, timings, reranking.
    page.click("text=Search (recall)")
    page.fill("#id_q", "Lumio Hub v2 wifi")
    page.click("#recall-form input[type=submit]")
    page.wait_for_selector("#recall-hits")
    summary = page.inner_text("#recall-summary")
    assert "legs: lexical, dense" in summary and "reranked: no" in summary
    assert "embed_ms" in summary.lower() and "legs_ms" in summary.lower()
    assert "keeps dropping wifi" in page.inner_text("#recall-hits")
    shot(page, "inspector-search")

    # The supersession chain of the old fact, walked forward.
    page.goto(f"/admin/tenants/user/{dana.pk}/memories/?type=semantic")
    page.click(f"tr[data-id='{seeded['old'].id}'] >> text=chain")
    page.wait_for_selector("#chain")
    chain = page.inner_text("#chain")
    assert chain.index("dana lives in Bristol") < chain.index("dana lives in Edinburgh")
    shot(page, "inspector-chain")

    page.click("text=Playbooks")
    row = page.locator(f"tr[data-id='{seeded['playbook'].id}']")
    assert row.locator("td.successes").inner_text() == "2"
    assert row.locator("td.failures").inner_text() == "1"
    shot(page, "inspector-playbooks")

    # The audit trail: filter by time, follow a request id, export exactly that view.
    page.goto("/admin/tenants/auditevent/")
    today = datetime.now(UTC).date().isoformat()
    page.fill("#time-range-filter input[name=created_from]", today)
    page.click("#time-range-filter input[type=submit]")
    page.wait_for_selector("#result_list")
    rotation = AuditEvent.objects.get(action="key.rotate", subject_user=dana)
    page.click(f"a[href='?request_id={rotation.request_id}'] >> nth=0")
    page.wait_for_selector("#request-filter")
    listed = page.locator("#result_list tbody tr").count()
    assert listed == AuditEvent.objects.filter(request_id=rotation.request_id).count() >= 1
    shot(page, "audit-trail")
    with page.expect_download() as download:
        page.click("#export-csv")
    rows = list(csv.DictReader(io.StringIO(download.value.path().read_text())))
    assert len(rows) == listed
    assert {r["request_id"] for r in rows} == {rotation.request_id}
    assert "key.rotate" in {r["action"] for r in rows}

    # The tenant dashboard: charts, not just numbers.
    page.goto("/admin/tenants/tenant/")
    page.click(f"a[href='/admin/tenants/tenant/{dls_acme.pk}/dashboard/']")
    page.wait_for_selector("#panel-memories")
    assert page.locator("svg.atlas-chart").count() >= 4
    assert "Scoped key ages" in page.inner_text("#panel-keys")
    recalls = int(page.inner_text("#recall-count"))
    assert recalls == 2  # dana's two turns; the inspector's search is not counted
    shot(page, "dashboard")


def test_an_auditor_sees_the_same_pages_without_actions_and_is_refused_when_posting(
    dls_acme, alice, acme_auditor, signed_in, shot, seed_memories
):
    from tenants.services.scoped_keys import scoped_key_provision

    scoped_key_provision(user=alice)
    seeded = seed_memories(alice)
    page = signed_in(acme_auditor)

    page.goto("/admin/tenants/user/")
    assert page.locator("select[name=action]").count() == 0
    assert page.locator("a.addlink[href='/admin/tenants/user/add/']").count() == 0
    shot(page, "auditor-users")

    pages = {
        "memories": f"/admin/tenants/user/{alice.pk}/memories/",
        "search": f"/admin/tenants/user/{alice.pk}/memories/search/?q=Lumio+hub",
        "chain": f"/admin/tenants/user/{alice.pk}/memories/{seeded['new'].id}/history/",
        "playbooks": f"/admin/tenants/user/{alice.pk}/memories/playbooks/",
        "dashboard": f"/admin/tenants/tenant/{dls_acme.pk}/dashboard/",
        "audit": "/admin/tenants/auditevent/",
    }
    for name, path in pages.items():
        response = page.goto(path)
        assert response is not None and response.status == 200, name
        assert page.locator("input[name=ids], #forget-selected, #forget-chain").count() == 0
        assert page.locator("select[name=action]").count() == 0
        shot(page, f"auditor-{name}")
    page.goto(pages["memories"])
    assert "read-only" in page.inner_text("h1")
    assert "lives in Edinburgh" in page.inner_text("#memory-table")

    # Posting anyway (with a valid CSRF token, so only the role can refuse it).
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "csrftoken")
    headers = {"X-CSRFToken": token, "Referer": page.url}
    targets = [
        f"/admin/tenants/user/{alice.pk}/memories/forget/",
        pages["memories"],
        pages["dashboard"],
        "/admin/tenants/user/add/",
    ]
    for target in targets:
        refused = page.request.post(
            target, form={"ids": seeded["new"].id, "external_id": "x"}, headers=headers
        )
        assert refused.status == 403, target
        assert "CSRF" not in refused.text()
    assert not User.objects.filter(external_id="x").exists()
    assert page.locator("#forget-selected, #forget-chain, input[name=ids]").count() == 0
