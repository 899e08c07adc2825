"""Four eyes is on for a new tenant unless the deployment says it has a single operator, and
the admin never offers an approval its operator cannot make."""

from __future__ import annotations

import pytest
from django.urls import reverse

from erasure.services import forget_request_open
from tenants.models import Tenant
from tenants.services.tenants import tenant_onboard
from tests.erasure.test_services import op

pytestmark = pytest.mark.django_db


def onboard(slug: str) -> Tenant:
    return tenant_onboard(
        slug=slug, name=slug.title(), admin_username=f"{slug}-admin",
        admin_password="correct-horse-battery-9",
    ).tenant  # fmt: skip


def test_a_new_tenant_requires_a_second_operator_by_default():
    assert onboard("initech").erasure_requires_second_operator is True


def test_a_single_operator_deployment_turns_it_off_for_new_tenants(settings):
    settings.ATLAS_ERASURE_FOUR_EYES = False

    assert onboard("hooli").erasure_requires_second_operator is False


def test_the_opener_is_offered_withdraw_not_approve_and_another_admin_approve(
    store, acme, alice, acme_admin, acme_client, platform_client
):
    acme.erasure_requires_second_operator = True
    acme.save()
    request = forget_request_open(
        user=alice, scope="user", reason="asked", ticket="T-1", by=op(acme_admin)
    )
    change = reverse("admin:erasure_forgetrequest_change", args=[request.pk])

    own = acme_client.get(change).content.decode()
    other = platform_client.get(change).content.decode()

    assert "Review and approve" not in own and 'value="Withdraw"' in own
    assert "Review and approve" in other and 'value="Reject"' in other


def test_an_operator_must_give_a_reason_and_a_ticket(store, alice, acme_admin):
    from atlas_platform.exceptions import ValidationError

    with pytest.raises(ValidationError, match="reason for the erasure and the ticket"):
        forget_request_open(user=alice, scope="user", reason="asked", ticket=" ", by=op(acme_admin))
