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
