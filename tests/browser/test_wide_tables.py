"""Every admin list at 1280 and 1400 px, light and dark: the last column (the user list's
inspector link among them) is inside the viewport, or the table's own scroll container reaches
it; the page itself never needs a sideways scroll to show it. Column titles and dates wrap, so
the user list fits whole beside its filters. Screenshots of the user and consolidation lists."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from consolidation.models import ConsolidationRun
from erasure.services import forget_request_open
from memory.services.writes import memory_write
from tenants.admin.site import site
from tenants.services.tokens import token_issue
from tests.browser.test_first_hour import themed
from tests.erasure.test_services import op

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Where the last column's cell is once every scrollable box around it is scrolled to its end.
REACH = """(selector) => {
  const cells = [...document.querySelectorAll(selector)];
  if (!cells.length) return null;
  let right = 0, left = Infinity, scrolled = 0;
  for (const cell of cells) {
    for (let box = cell.parentElement; box && box !== document.body; box = box.parentElement) {
      const style = getComputedStyle(box);
      if (['auto', 'scroll'].includes(style.overflowX) && box.scrollWidth > box.clientWidth) {
        box.scrollLeft = box.scrollWidth;
        scrolled += 1;
      }
    }
    const r = cell.getBoundingClientRect();
    right = Math.max(right, r.right);
    left = Math.min(left, r.left);
  }
  return {left, right, scrolled, width: document.documentElement.clientWidth,
          page: document.documentElement.scrollWidth};
}"""
LAST_CELLS = (
    "#result_list tbody tr:first-child td:last-child, "
    "table.atlas-wide tbody tr:first-child td:last-child"
)


@pytest.fixture
def busy(settings: Any, tmp_path: Any, no_cluster: None, acme: Any, alice: Any, acme_admin: Any):
    """A row in most lists: memories, a token, a forget request, a consolidation run."""
    settings.ATLAS_MEMORY_BACKEND = "embedded"
    settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")
    fact = memory_write(user=alice, text="Alice likes long tables", memory_type="semantic")
    token_issue(tenant=acme, user=alice, name="a support bot with a long name for a token")
    forget_request_open(
        reason="the subject asked",
        ticket="DPO-1",
        user=alice,
        scope="ids",
        memory_ids=[fact.id],
        by=op(acme_admin),
    )
    ConsolidationRun.objects.create(tenant=acme, user=alice, trigger="on_demand", status="done")


def lists() -> list[str]:
    return [
        reverse(f"admin:{m._meta.app_label}_{m._meta.model_name}_changelist")
        for m in site._registry
    ]


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("width", [1280, 1400])
def test_every_lists_last_column_is_reachable(
    busy, alice, platform_admin, signed_in, shot, width, theme
):
    page = themed(signed_in(platform_admin), theme)
    page.set_viewport_size({"width": width, "height": 900})
    pages = [
        *lists(),
        reverse("admin:tenants_user_memories", args=[alice.pk]),
        reverse("admin:tenants_user_recall", args=[alice.pk]) + "?q=Alice+tables",
        reverse("admin:tenants_tenant_dashboard", args=[alice.tenant.pk]),
    ]
    checked = []
    for url in pages:
        page.goto(url)
        where = page.evaluate(REACH, LAST_CELLS)
        if where is None:
            continue  # an empty list: no table
        checked.append(url)
        if url == reverse("admin:tenants_user_changelist"):  # wraps: fits, no scroll
            assert where["scrolled"] == 0, where
        assert where["right"] <= where["width"] + 1 and where["left"] >= 0, (url, where)
        assert where["page"] <= where["width"] + 1, (url, where)  # no sideways page scroll
    assert reverse("admin:tenants_user_changelist") in checked
    assert len(checked) >= 8, checked

    page.goto(reverse("admin:tenants_user_changelist"))
    inspect = page.locator("#result_list a", has_text="inspect").first
    inspect.scroll_into_view_if_needed()
    box = inspect.bounding_box()
    assert box is not None and box["x"] + box["width"] <= width
    shot(page, f"users-{width}-{theme}")
    page.goto(reverse("admin:consolidation_consolidationrun_changelist"))
    shot(page, f"consolidation-runs-{width}-{theme}")
