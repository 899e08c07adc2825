"""The admin's backend migration page refuses what it cannot do with an admin message (never a
500) and is for platform admins only; the move itself is tests/browser/test_backend_migration."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from tenants.models import Tenant

pytestmark = pytest.mark.django_db


def page(tenant: Tenant) -> str:
    return reverse("admin:tenants_tenant_migrate", args=[tenant.pk])


def test_on_the_embedded_store_it_says_a_cluster_is_needed(
    settings: Any, tmp_path: Any, no_cluster: None, acme: Tenant, platform_client: Any
) -> None:
    settings.ATLAS_MEMORY_BACKEND = "embedded"
    settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")

    shown = platform_client.get(page(acme))
    ran = platform_client.post(page(acme), {"confirmed": "yes"}, follow=True)

    for response in (shown, ran):
        assert response.status_code == 200
        text = [str(m) for m in response.context["messages"]]
        assert any("not running on Elasticsearch" in m for m in text), text
    assert b"migration-confirmation" not in shown.content
    acme.refresh_from_db()
    assert acme.isolation_mode == "filter"


def test_a_missing_source_file_is_a_message(
    es: Any, settings: Any, tmp_path: Any, acme: Tenant, platform_client: Any
) -> None:
    settings.ATLAS_MEMORY_BACKEND = "elasticsearch"
    settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "nope.sqlite3")

    response = platform_client.post(page(acme), {"confirmed": "yes"}, follow=True)

    assert response.status_code == 200
    assert any("No embedded store" in str(m) for m in response.context["messages"])
    acme.refresh_from_db()
    assert acme.isolation_mode == "filter"


def test_it_is_for_platform_admins_only(
    acme: Tenant, globex: Tenant, acme_client: Any, auditor_client: Any, platform_client: Any
) -> None:
    assert acme_client.get(page(acme)).status_code == 403
    assert auditor_client.get(page(acme)).status_code == 403
    assert acme_client.post(page(acme), {"confirmed": "yes"}).status_code == 403
    changelist = acme_client.get(reverse("admin:tenants_tenant_changelist"))
    assert b"migrate_backend" not in changelist.content
    assert (
        b"migrate_backend"
        in platform_client.get(reverse("admin:tenants_tenant_changelist")).content
    )
    change = reverse("admin:tenants_tenant_change", args=[acme.pk])
    assert b'id="migrate-link"' in platform_client.get(change).content
    assert b'id="migrate-link"' not in acme_client.get(change).content


def test_the_action_takes_one_tenant_at_a_time(
    acme: Tenant, globex: Tenant, platform_client: Any
) -> None:
    url = reverse("admin:tenants_tenant_changelist")
    both = {"action": "migrate_backend", "_selected_action": [acme.pk, globex.pk], "index": 0}
    response = platform_client.post(url, both, follow=True)
    assert any("one tenant at a time" in str(m) for m in response.context["messages"])

    one = {**both, "_selected_action": [acme.pk]}
    assert platform_client.post(url, one)["Location"] == page(acme)
