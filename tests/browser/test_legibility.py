"""Every text on the operator's main pages is legible in the light and the dark theme, in
Chromium at 1400x900 (issue 34, item 8): measured on the colours the browser computes, each
visible text stands out from the background behind it by WCAG's 4.5:1 (3:1 for large text).
Atlas's own muted, flag and alert colours were fixed greys and oranges that sank into the dark
theme (#666 at 3.3:1, #b35c00 at 4.0:1, #ba2121 at 3.0:1 on #121212)."""

from __future__ import annotations

from typing import Any

import pytest

from erasure.services import forget_request_open
from memory.services.writes import memory_write
from tenants.services.tokens import token_issue
from tests.browser.test_first_hour import themed
from tests.erasure.test_services import op

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def embedded(settings: Any, tmp_path: Any, no_cluster: None) -> None:
    settings.ATLAS_MEMORY_BACKEND = "embedded"
    settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")


# Each visible element with text of its own whose contrast against the nearest opaque
# background behind it is below WCAG AA: 4.5:1, or 3:1 for large text (24 px, or 18.66 px bold).
FAINT_TEXT = """() => {
  const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const lin = (v) => {
    v /= 255;
    return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
  };
  const lum = ([r, g, b]) => 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
  const ratio = (a, b) => {
    const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
    return (x + 0.05) / (y + 0.05);
  };
  const background = (el) => {
    for (let box = el; box; box = box.parentElement) {
      const c = rgb(getComputedStyle(box).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0.9)) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const faint = [];
  for (const el of document.querySelectorAll('body *')) {
    if (!['#header', '.breadcrumbs', '#nav-sidebar', '#content', '.messagelist']
        .some((s) => el.closest(s))) continue;
    if (![...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim())) continue;
    const box = el.getBoundingClientRect();
    const style = getComputedStyle(el);
    if (!box.width || !box.height || style.visibility === 'hidden') continue;
    const size = parseFloat(style.fontSize);
    const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
    const contrast = ratio(rgb(style.color).slice(0, 3), background(el));
    if (contrast < (large ? 3 : 4.5)) {
      faint.push(`${el.tagName.toLowerCase()}.${el.className} "${el.textContent.trim()
        .slice(0, 40)}" ${style.color} at ${contrast.toFixed(2)}:1`);
    }
  }
  return faint;
}"""


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_every_text_of_the_main_pages_is_legible_in_the_theme(
    busy_week, acme, alice, acme_admin, platform_admin, signed_in, shot, theme
):
    fact = memory_write(user=alice, text="Alice lives in Edinburgh", memory_type="semantic")
    token_issue(tenant=acme, user=alice, name="alice bot")
    request = forget_request_open(
        reason="the subject asked", ticket="DPO-7", user=alice, scope="ids",
        memory_ids=[fact.id], by=op(acme_admin),
    )  # fmt: skip
    pages = [
        "/admin/",
        "/admin/overview/",
        f"/admin/tenants/tenant/{acme.pk}/dashboard/",
        "/admin/tenants/tenant/",
        f"/admin/tenants/tenant/{acme.pk}/change/",
        "/admin/tenants/user/",
        f"/admin/tenants/user/{alice.pk}/change/",
        f"/admin/tenants/user/{alice.pk}/memories/",
        f"/admin/tenants/user/{alice.pk}/memories/search/?q=where+does+alice+live",
        f"/admin/tenants/user/{alice.pk}/memories/{fact.id}/history/",
        "/admin/tenants/platformtoken/",
        "/admin/tenants/operator/add/",
        "/admin/tenants/auditevent/",
        "/admin/erasure/forgetrequest/",
        f"/admin/erasure/forgetrequest/{request.pk}/change/",
        f"/admin/erasure/forgetrequest/{request.pk}/approve/",
    ]
    page = themed(signed_in(platform_admin), theme)
    faint: dict[str, list[str]] = {}
    for url in pages:
        response = page.goto(url)
        assert response is not None and response.status == 200, url
        found = page.evaluate(FAINT_TEXT)
        if found:
            faint[url] = found
    shot(page, f"forget-approve-{theme}")
    assert faint == {}, faint
