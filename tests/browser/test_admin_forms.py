"""Add forms and names in Chromium, light and dark: a token's expiry is a date-time picker with
its validation messages on the field, the fields line up like Django's own forms, a one-tenant
admin is not asked to pick their tenant, Django's accounts and the memory subjects have distinct
names, and a consolidation run is named by its user's id and time, not by primary keys."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import pytest

from consolidation.models import ConsolidationRun
from tenants.models import PlatformToken
from tests.browser.test_first_hour import themed

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def embedded(settings: Any, tmp_path: Any, no_cluster: None) -> None:
    settings.ATLAS_MEMORY_BACKEND = "embedded"
    settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")


def lefts(page: Any, selector: str) -> set[int]:
    return {round(box["x"]) for box in (e.bounding_box() for e in page.locator(selector).all())}


def layout(page: Any, inputs: str) -> dict[str, int]:
    """Where an aligned form puts its labels, and its inputs and help texts relative to them."""
    (label,) = lefts(page, "fieldset.aligned label:not(.vCheckboxLabel)")
    (field,) = lefts(page, inputs)
    helps = lefts(page, "fieldset.aligned .form-row .flex-container:not(.checkbox-row) + .help")
    return {"label": label, "input": field - label, "help": max(helps) - label}


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_token_form_has_a_date_time_picker_and_no_tenant_to_pick(
    acme, alice, acme_admin, signed_in, shot, theme
):
    page = themed(signed_in(acme_admin), theme)
    page.goto("/admin/tenants/platformtoken/add/")

    assert page.locator("select#id_tenant").count() == 0  # their only tenant: shown, not picked
    assert page.inner_text("#fixed-tenant") == "Acme"
    expiry = page.locator("#id_expires_at")
    assert expiry.get_attribute("type") == "datetime-local"
    # Aligned like Django's own forms (the tenant's change page here): labels in one column,
    # inputs and help texts where Django puts them, checkboxes before their labels on the left.
    inputs = "fieldset.aligned .form-row input:not([type=hidden]):not([type=checkbox])"
    ours = layout(page, inputs)
    assert len(lefts(page, f"{inputs}, fieldset.aligned select")) == 1
    assert lefts(page, "#fixed-tenant") == lefts(page, inputs)
    assert lefts(page, "fieldset.aligned input[type=checkbox]") == {ours["label"]}
    page.goto(f"/admin/tenants/tenant/{acme.pk}/change/")
    assert layout(page, inputs) == ours
    page.goto("/admin/tenants/platformtoken/add/")
    shot(page, f"token-add-{theme}")

    page.fill("#id_name", "support bot")
    page.fill("#id_expires_at", "2020-01-01T10:00")
    page.click("input[name=_save]")
    error = page.locator(".form-row.field-expires_at .errorlist")
    assert error.inner_text() == "The expiry must be in the future."
    assert page.input_value("#id_expires_at") == "2020-01-01T10:00"  # kept for correcting
    shot(page, f"token-add-error-{theme}")

    page.fill("#id_expires_at", "2031-05-04T12:30")
    page.click("input[name=_save]")
    page.wait_for_selector("text=support bot")
    token = PlatformToken.objects.get(name="support bot")
    assert token.tenant == acme
    assert token.expires_at == datetime(2031, 5, 4, 12, 30, tzinfo=UTC)


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_accounts_and_end_users_have_distinct_names(
    acme, alice, platform_admin, acme_admin, signed_in, shot, theme
):
    page = themed(signed_in(platform_admin), theme)
    page.goto("/admin/")
    sidebar = page.locator("#content-main a").all_inner_texts()
    assert "Operator accounts" in sidebar and "End users" in sidebar
    assert "Users" not in sidebar  # no two sections called "Users"
    shot(page, f"index-{theme}")
    page.goto("/admin/auth/user/")
    assert page.inner_text("#content h1").startswith("Operator accounts")

    run = ConsolidationRun.objects.create(tenant=acme, user=alice, trigger="on_demand")
    page.goto(f"/admin/consolidation/consolidationrun/{run.pk}/change/")
    title = page.inner_text("#content h2, #content h1")
    breadcrumbs = page.inner_text(".breadcrumbs")
    assert f"alice's consolidation of {run.created_at:%Y-%m-%d %H:%M}" in breadcrumbs
    assert "#" not in breadcrumbs and f" of {alice.pk} " not in title
    shot(page, f"consolidation-run-{theme}")

    tenant_page = themed(signed_in(acme_admin), theme)
    tenant_page.goto("/admin/tenants/user/add/")
    assert tenant_page.locator("select#id_tenant").count() == 0
    assert tenant_page.inner_text("#content h1") == "Add an end user"
    shot(tenant_page, f"user-add-{theme}")


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_every_end_user_page_says_end_users_and_its_breadcrumbs_lead_somewhere(
    acme, alice, acme_admin, signed_in, shot, theme
):
    from memory.services.writes import memory_write

    fact = memory_write(user=alice, text="Alice prefers tea", memory_type="semantic")
    page = themed(signed_in(acme_admin), theme)
    pages = [
        "/admin/tenants/user/",
        "/admin/tenants/user/add/",
        f"/admin/tenants/user/{alice.pk}/change/",
        f"/admin/tenants/user/{alice.pk}/memories/",
        f"/admin/tenants/user/{alice.pk}/memories/search/",
        f"/admin/tenants/user/{alice.pk}/memories/playbooks/",
        f"/admin/tenants/user/{alice.pk}/memories/{fact.id}/history/",
    ]
    crumbs: set[str] = set()
    for url in pages:
        assert page.goto(url).status == 200, url
        trail = page.inner_text(".breadcrumbs")
        assert "End users" in trail, (url, trail)
        assert not re.search(r"\bUsers\b", trail), (url, trail)  # never the bare model name
        crumbs |= set(page.locator(".breadcrumbs a").evaluate_all("as => as.map(a => a.href)"))
    shot(page, f"end-user-history-{theme}")
    for link in sorted(crumbs):  # every breadcrumb leads to a page that opens
        response = page.goto(link)
        assert response is not None and response.status == 200, link
