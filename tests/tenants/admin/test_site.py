"""The admin site itself: Django's "view on site" redirect answers 404 for an id that cannot be
a row, whatever the model's key (500 for a UUID-keyed model before)."""

from __future__ import annotations

import pytest
from django.contrib.contenttypes.models import ContentType
from django.test import Client
from django.urls import reverse

from knowledge.models import ReconcileRun
from tenants.models import Tenant

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("model", [ReconcileRun, Tenant], ids=["uuid-key", "integer-key"])
@pytest.mark.parametrize("object_id", ["not-a-uuid", "1%00", "x" * 300, "-1"])
def test_view_on_site_with_an_id_that_is_no_row_is_a_404(platform_client: Client, model, object_id):
    content_type = ContentType.objects.get_for_model(model)
    path = reverse("admin:view_on_site", args=[content_type.pk, "ID"]).replace("ID", object_id)

    response = platform_client.get(path)

    assert response.status_code == 404, response.content[:300]


def test_view_on_site_of_an_unknown_content_type_is_a_404(platform_client: Client):
    response = platform_client.get(reverse("admin:view_on_site", args=["nope", "1"]))

    assert response.status_code == 404


def test_view_on_site_still_needs_a_signed_in_operator(client: Client):
    content_type = ContentType.objects.get_for_model(ReconcileRun)
    response = client.get(reverse("admin:view_on_site", args=[content_type.pk, "not-a-uuid"]))

    assert response.status_code == 302 and "/login/" in response["Location"]
