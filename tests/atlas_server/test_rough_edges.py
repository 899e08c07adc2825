"""Small things an operator's script or browser hits first: the tab icon, and a refusal that
logs one line instead of a traceback."""

from __future__ import annotations

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_the_favicon_is_served_rather_than_a_404_on_every_page(client):
    response = client.get("/favicon.ico")

    assert response.status_code == 200 and response["Content-Type"] == "image/svg+xml"
    assert b"<svg" in response.content


def test_a_refused_page_logs_one_line_without_a_traceback(alice, auditor_client, caplog):
    with caplog.at_level("WARNING", logger="django.request"):
        refused = auditor_client.post(reverse("admin:tenants_user_forget", args=[alice.pk]))

    assert refused.status_code == 403
    lines = [r for r in caplog.records if r.name == "django.request"]
    assert lines and all(r.exc_info is None and r.exc_text is None for r in lines)
    assert "Forbidden" in lines[0].getMessage()
