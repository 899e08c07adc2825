"""The pages a new operator meets in the first hour, in Chromium, light and dark: the user page's
MCP snippets (copy buttons that copy), the embedded default's dashboard (no key panel: no
warning nobody can fix), the erasure confirmation (counts, no texts) and the confirmations
before suspending a tenant and revoking tokens. Screenshots per theme under
var/test-artifacts/browser/."""

from __future__ import annotations

import json
from typing import Any

import pytest

from erasure.services import forget_request_open
from memory.mcp.client_config import client_snippets
from memory.services.writes import memory_write
from tenants.services.tokens import token_issue
from tests.erasure.test_services import op

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def embedded(settings: Any, tmp_path: Any, no_cluster: None) -> None:
    settings.ATLAS_MEMORY_BACKEND = "embedded"
    settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")


def themed(page: Any, theme: str) -> Any:
    """The admin in ``theme`` (Django's theme switch keeps it in localStorage)."""
    page.evaluate(f"localStorage.setItem('theme', '{theme}')")
    page.reload()
    assert page.evaluate("document.documentElement.dataset.theme") == theme
    return page


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_first_hour_pages(
    embedded, acme, alice, acme_admin, platform_admin, signed_in, shot, live_server, theme
):
    secret_text = "Alice's passport number is X123"
    fact = memory_write(user=alice, text=secret_text, memory_type="semantic")
    request = forget_request_open(
        reason="the subject asked",
        ticket="DPO-1",
        user=alice,
        scope="ids",
        memory_ids=[fact.id],
        by=op(acme_admin),
    )
    token_issue(tenant=acme, user=alice, name="support bot")
    page = signed_in(acme_admin)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])

    # The user page: one block per client, each with a copy button that copies it.
    page.goto(f"/admin/tenants/user/{alice.pk}/change/")
    themed(page, theme)
    buttons = page.locator("button.copy-snippet")
    assert buttons.count() == 4
    buttons.first.click()
    page.wait_for_function("document.querySelector('button.copy-snippet').textContent == 'Copied'")
    copied = page.evaluate("navigator.clipboard.readText()")
    claude_code = json.loads(copied)
    assert claude_code["mcpServers"]["atlas"]["headers"]["Authorization"] == "Bearer ${ATLAS_TOKEN}"
    expected = dict(client_snippets(f"{live_server.url}/api/atlas/mcp/alice"))
    assert copied in expected.values()
    buttons.nth(2).click()  # Cursor's: an env-var reference too, in Cursor's syntax
    page.wait_for_function(
        "document.querySelectorAll('button.copy-snippet')[2].textContent == 'Copied'"
    )
    cursor = json.loads(page.evaluate("navigator.clipboard.readText()"))
    assert cursor["mcpServers"]["atlas"]["headers"]["Authorization"] == "Bearer ${env:ATLAS_TOKEN}"
    shot(page, f"user-snippets-{theme}")

    # The embedded default's dashboard: no key panel at all (there are no keys), no red flag.
    page.goto(f"/admin/tenants/tenant/{acme.pk}/dashboard/")
    panel = page.inner_text("#content-main")
    assert "Scoped key" not in panel and "need a key" not in panel
    assert page.locator("#panel-keys, #keys .atlas-flag").count() == 0
    shot(page, f"dashboard-embedded-{theme}")

    # Approving a forget request: a confirmation with counts and a sample of what goes (the
    # approver may read it; it is never stored).
    page.goto(f"/admin/erasure/forgetrequest/{request.pk}/change/")
    page.click("input[name=approve]")
    page.wait_for_selector("#approve-confirmation")
    assert "semantic\t1" in page.inner_text("#erasure-preview")
    assert secret_text in page.inner_text("#erasure-sample")
    shot(page, f"erasure-confirm-{theme}")
    page.click("text=No, go back")
    page.wait_for_selector("#forget-request-decisions")
    request.refresh_from_db()
    assert request.status == "pending"

    # Revoking a token asks first.
    page.goto("/admin/tenants/platformtoken/")
    page.check("input[name=_selected_action]")
    page.select_option("select[name=action]", "revoke")
    page.click("button[name=index]")
    page.wait_for_selector("#action-confirmation")
    assert "support bot" in page.inner_text("#confirm-objects")
    shot(page, f"revoke-confirm-{theme}")

    # Suspending a tenant asks first (platform admins only).
    admin_page = themed(signed_in(platform_admin), theme)
    admin_page.goto("/admin/tenants/tenant/")
    admin_page.check(f"input[name=_selected_action][value='{acme.pk}']")
    admin_page.select_option("select[name=action]", "suspend")
    admin_page.click("button[name=index]")
    admin_page.wait_for_selector("#action-confirmation")
    shot(admin_page, f"suspend-confirm-{theme}")
    admin_page.click("input[value^='Yes']")
    admin_page.wait_for_selector(".messagelist")
    acme.refresh_from_db()
    assert acme.status == "suspended"
