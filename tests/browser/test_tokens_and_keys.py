"""Tokens and keys in Chromium, light and dark (issue 34, items 5-7): a platform admin picks a
tenant and sees only its users, issues a token, copies the secret with the button, and a reload
of the secret page issues nothing; the list shows each token's rights. On the embedded store the
users list has no key column or action and onboarding promises no key; the index is grouped by
what operators do. Screenshots per theme under var/test-artifacts/browser/."""

from __future__ import annotations

from typing import Any

import pytest

from memory.services.writes import memory_write
from tenants.models import PlatformToken
from tests.browser.test_first_hour import themed

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def embedded(settings: Any, tmp_path: Any, no_cluster: None) -> None:
    settings.ATLAS_MEMORY_BACKEND = "embedded"
    settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")


def no_server_error(page: Any) -> None:
    assert "Server Error" not in page.content()


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_a_token_is_issued_for_the_chosen_tenants_user_copied_and_never_reissued(
    acme, globex, alice, charlie, platform_admin, signed_in, shot, theme
):
    page = themed(signed_in(platform_admin), theme)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto("/admin/tenants/platformtoken/add/")
    page.select_option("#id_tenant", str(acme.pk))
    users = page.locator("#id_user option[data-tenant]:not([hidden])")
    assert users.all_inner_texts() == [str(alice)]  # Globex's charlie is not offered
    page.select_option("#id_user", str(alice.pk))
    page.fill("#id_name", "alice bot")
    shot(page, f"token-add-{theme}")
    page.click("input[name=_save]")

    page.wait_for_selector("#issued-token")
    token = PlatformToken.objects.get(name="alice bot")
    assert page.url.endswith(f"/admin/tenants/platformtoken/{token.pk}/issued/")  # a GET page
    secret = page.inner_text("#issued-token")
    assert secret.startswith(f"atlas_{token.lookup}_")
    page.click("#copy-token")
    page.wait_for_selector("#copy-state:has-text('Copied')")
    assert page.evaluate("navigator.clipboard.readText()") == secret
    shot(page, f"token-secret-{theme}")

    page.reload()
    assert page.locator("#issued-token").count() == 0
    assert page.locator("#secret-gone").is_visible()
    assert secret not in page.content()
    assert PlatformToken.objects.count() == 1  # the reload issued nothing
    shot(page, f"token-secret-reloaded-{theme}")

    PlatformToken.objects.filter(pk=token.pk).update(user=None, allow_export=True)
    page.goto("/admin/tenants/platformtoken/?right=export")
    assert "any user's memories, export" in page.inner_text("#result_list")
    page.goto("/admin/tenants/platformtoken/?right=user")
    assert page.locator("#result_list").count() == 0  # no user token left
    no_server_error(page)


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_embedded_store_shows_no_keys_and_the_index_is_grouped(
    acme, alice, platform_admin, signed_in, shot, theme
):
    page = themed(signed_in(platform_admin), theme)
    page.goto("/admin/")
    captions = [
        c.strip() for c in page.locator("#content-main .module caption").all_text_contents()
    ]
    assert captions[:1] == ["Dashboards"]
    expected = ["Tenants and people", "Memory", "Erasure", "Audit", "Agents and knowledge"]
    assert [c for c in captions if c in expected] == expected
    assert "Scoped keys" not in page.inner_text("#content-main")
    shot(page, f"index-grouped-{theme}")

    page.goto("/admin/tenants/user/")
    headers = page.locator("#result_list thead th").all_inner_texts()
    assert not {"KEY", "KEY AGE", "LAST ROTATION"} & {h.strip().upper() for h in headers}
    actions = page.locator("select[name=action] option").all_inner_texts()
    assert not [a for a in actions if "key" in a.lower()]
    shot(page, f"users-embedded-{theme}")

    page.goto("/admin/tenants/tenant/add/")
    assert "memory_migrate" in page.inner_text("#no-cluster-note")
    assert "scoped cluster key" not in page.inner_text("#content-main")
    assert page.locator("#id_isolation_mode").count() == 0
    shot(page, f"onboard-embedded-{theme}")

    memory_write(user=alice, text="Alice prefers tea", memory_type="semantic")
    page.goto(f"/admin/tenants/tenant/{acme.pk}/dashboard/")
    assert page.locator("#panel-keys").count() == 0  # no keys on the embedded store
    assert "isolation filter (embedded store)" in page.inner_text("#content-main")
    chart = page.locator("svg.atlas-chart").first.bounding_box()
    panel = page.locator(".atlas-panel").first.bounding_box()
    assert chart is not None and panel is not None
    assert chart["width"] > 0.9 * panel["width"] - 20  # fills its panel, not ~380 px
    assert page.locator("svg.atlas-chart line.grid").count() >= 3
    shot(page, f"dashboard-embedded-{theme}")

    page.goto("/admin/tenants/operator/add/")
    assert page.input_value("#id_role") == "auditor"  # the least powerful role preselected
    page.goto("/admin/auth/user/")
    assert page.locator("a[href$='/admin/auth/user/add/']").count() == 0  # one way to add one
    no_server_error(page)
