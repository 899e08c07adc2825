"""The tenant form carries the archive settings (issue 35, part 2): how long after it was
superseded a fact moves to the archive, and how long archived facts are kept."""

from __future__ import annotations

import pytest
from django.test import Client

from tenants.models import AuditEvent, Tenant

pytestmark = pytest.mark.django_db


def test_a_tenant_admin_sets_the_archive_settings_on_the_tenant_form(
    acme: Tenant, acme_client: Client
) -> None:
    url = f"/admin/tenants/tenant/{acme.pk}/change/"
    page = acme_client.get(url)
    assert page.status_code == 200
    assert b'name="archive_after_days"' in page.content
    assert b'name="archive_retention_days"' in page.content
    form = page.context["adminform"].form
    data = {name: form[name].value() or "" for name in form.fields}
    data |= {"archive_after_days": "30", "archive_retention_days": "400"}

    response = acme_client.post(url, data)

    assert response.status_code == 302, response.content[:2000]
    acme.refresh_from_db()
    assert (acme.archive_after_days, acme.archive_retention_days) == (30, 400)
    assert AuditEvent.objects.filter(action="tenant.update", tenant=acme).exists()
