"""A tenant made on the embedded default moved to Elasticsearch through the admin, in Chromium,
light and dark: the action asks first (counts per type, source and target), the run reports
what it moved and verified and the new mode, and afterwards every memory is found on the cluster
with the tenant in mode ``dls``. Tenant admins get neither the action nor the page."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memory.selectors import memory_export
from memory.services import bookkeeping
from memory.services.catalog import catalog_import
from memory.services.documents import searchable_put, searchable_search
from memory.services.recall import memory_recall
from memory.services.writes import memory_turn_record, memory_write
from tenants.models import ScopedKey, Tenant
from tests.browser.test_first_hour import themed

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
NOW = datetime(2026, 1, 5, tzinfo=UTC)


@pytest.fixture
def on_embedded(
    settings: Any, tmp_path: Path, acme: Tenant, alice: Any, bob: Any
) -> dict[str, list[str]]:
    """Acme's memories written on the embedded store (mode filter, no keys)."""
    settings.ATLAS_MEMORY_BACKEND = "embedded"
    settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")
    old = memory_write(user=alice, text="Alice lives in Lyon", memory_type="semantic")
    memory_write(
        user=alice, text="Alice lives in Nantes", memory_type="semantic", supersedes=[old.id]
    )
    memory_turn_record(user=alice, text="My dog Pixel chews cables")
    memory_write(
        user=alice,
        text="Restart the router",
        memory_type="procedural",
        name="router",
        steps=[{"instruction": "Unplug it"}],
    )
    for n in range(5):
        memory_write(user=bob, text=f"Bob's note number {n}", memory_type="semantic")
    catalog_import(tenant=acme, documents=[{"id": "hours", "text": "Open 9 to 5"}])
    searchable_put(  # the knowledge graph's entity: moves too
        user=alice, doc_id="entity-pixel", text="Pixel: Alice's dog, a beagle", timestamp=NOW
    )
    bookkeeping.drain()
    return {u.external_id: sorted(d.id for d in memory_export(user=u)) for u in (alice, bob)}


def counts(page: Any, table: str) -> dict[str, list[str]]:
    rows = page.locator(f"{table} tbody tr").all_inner_texts()
    return {r.split("\t")[0]: r.split("\t")[1:] for r in rows}


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_a_tenant_is_moved_to_the_cluster_through_the_admin(
    on_embedded, es, settings, acme, alice, bob, platform_admin, signed_in, shot, theme
):
    settings.ATLAS_MEMORY_BACKEND = "elasticsearch"  # Atlas restarted with a cluster
    page = themed(signed_in(platform_admin), theme)

    page.goto("/admin/tenants/tenant/")
    page.check(f"input[name=_selected_action][value='{acme.pk}']")
    page.select_option("select[name=action]", "migrate_backend")
    page.click("button[name=index]")
    page.wait_for_selector("#migration-confirmation")
    plan = counts(page, "#migration-plan")
    assert plan["semantic"] == ["7", "0"] and plan["episodic"] == ["1", "0"]
    assert plan["procedural"] == ["1", "0"] and plan["catalog"] == ["1", "0"]
    assert plan["entity"] == ["1", "0"] and plan["total"][0] == "11"
    assert "memory.sqlite3" in page.inner_text("#migration-source")
    assert page.inner_text("#migration-target").startswith("Elasticsearch at http")
    assert settings.ATLAS_ES_PASSWORD not in page.content()
    shot(page, f"migration-confirm-{theme}")
    acme.refresh_from_db()
    assert acme.isolation_mode == "filter"  # nothing moved before the confirmation

    page.click("input[value^='Yes']")
    page.wait_for_selector("#migration-result")
    copied = counts(page, "#migration-copied")
    assert copied["semantic"] == ["7"] and copied["catalog"] == ["1"]
    assert "every memory found" in page.inner_text("#migration-summary")
    assert page.inner_text("#migration-mode") == "dls"
    shot(page, f"migration-result-{theme}")

    acme.refresh_from_db()
    assert acme.isolation_mode == "dls"
    assert ScopedKey.objects.filter(user__tenant=acme, status="active").count() == 2
    for user in (alice, bob):  # read back from the cluster with each user's own key
        user.refresh_from_db()
        assert sorted(d.id for d in memory_export(user=user)) == on_embedded[user.external_id]
    assert [h.id for h in searchable_search(user=alice, query="beagle")] == ["entity-pixel"]
    hits = memory_recall(user=alice, query="where does Alice live?", k=3).hits
    assert hits[0].doc.text == "Alice lives in Nantes"

    # Again: the confirmation shows everything on the cluster already.
    page.goto(f"/admin/tenants/tenant/{acme.pk}/migrate/")
    assert counts(page, "#migration-plan")["semantic"] == ["7", "7"]


def test_a_tenant_admin_gets_neither_the_action_nor_the_page(
    on_embedded, es, settings, acme, acme_admin, signed_in
):
    settings.ATLAS_MEMORY_BACKEND = "elasticsearch"
    page = signed_in(acme_admin)
    page.goto(f"/admin/tenants/tenant/{acme.pk}/change/")
    assert page.locator("#migrate-link").count() == 0
    response = page.goto(f"/admin/tenants/tenant/{acme.pk}/migrate/")
    assert response is not None and response.status == 403
