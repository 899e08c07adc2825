"""The platform overview in Chromium, light and dark (issue 34, item 8): a platform admin
follows the index's link to a table of every tenant with its memories, recall volume and open
erasures (no key column on the embedded store), each row linking its dashboard. Screenshots per
theme under var/test-artifacts/browser/."""

from __future__ import annotations

from typing import Any

import pytest

from memory.services.writes import memory_write
from tests.browser.test_first_hour import themed

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def embedded(settings: Any, tmp_path: Any, no_cluster: None) -> None:
    settings.ATLAS_MEMORY_BACKEND = "embedded"
    settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_platform_overview_lists_every_tenant_with_its_columns(
    acme, globex, alice, platform_admin, signed_in, shot, theme
):
    memory_write(user=alice, text="Alice prefers tea", memory_type="semantic")
    page = themed(signed_in(platform_admin), theme)
    page.goto("/admin/")
    page.click("#content-main a:has-text('Platform overview')")

    page.wait_for_selector("#platform-overview")
    headers = [h.strip().lower() for h in page.locator("#platform-overview th").all_inner_texts()]
    assert headers == ["tenant", "status", "memories", "recalls 24 h / 7 d", "open erasures"]
    acme_row = page.locator(f"#tenant-{acme.pk} td").all_inner_texts()
    assert acme_row[0] == "Acme" and acme_row[2:] == ["1", "0 / 0", "0"]
    assert page.locator("tr.tenant-row").count() == 2
    table = page.locator("#platform-overview table").bounding_box()
    content = page.locator("#content-main").bounding_box()
    assert table is not None and content is not None
    assert table["width"] > 0.9 * content["width"] - 20  # the table spans the page
    assert "Server Error" not in page.content()
    shot(page, f"platform-overview-{theme}")

    page.click(f"#tenant-{acme.pk} a")
    page.wait_for_selector("#panel-memories")


def test_the_overview_pages_through_more_than_five_hundred_tenants(
    acme, platform_admin, signed_in, shot
):
    from tenants.admin.site import OVERVIEW_PAGE_SIZE
    from tenants.models import Tenant

    Tenant.objects.bulk_create(
        [Tenant(name=f"Tenant {n:04d}", slug=f"tenant-{n:04d}") for n in range(520)]
    )
    total = Tenant.objects.count()
    last_page = -(-total // OVERVIEW_PAGE_SIZE)
    page = signed_in(platform_admin)
    page.goto("/admin/overview/")
    assert page.locator("tr.tenant-row").count() == OVERVIEW_PAGE_SIZE
    assert f"of {total} (page 1 of {last_page})" in page.inner_text("#overview-pages")
    first_rows = page.locator("tr.tenant-row").evaluate_all("rows => rows.map(r => r.id)")
    page.click("#overview-next")
    page.wait_for_url("**/admin/overview/?page=2")
    second_rows = page.locator("tr.tenant-row").evaluate_all("rows => rows.map(r => r.id)")
    assert len(second_rows) == OVERVIEW_PAGE_SIZE and not set(first_rows) & set(second_rows)
    page.goto(f"/admin/overview/?page={last_page}")
    assert page.locator("tr.tenant-row").count() == total - (last_page - 1) * OVERVIEW_PAGE_SIZE
    assert page.locator("#overview-next").count() == 0
    page.click("#overview-previous")
    page.wait_for_url(f"**/admin/overview/?page={last_page - 1}")
    shot(page, "platform-overview-paged")
