"""The audit trail: filters (tenant, actor, action, user, time range, request id), request ids
that link related events, and a CSV export of exactly the filtered view. Append-only."""

from __future__ import annotations

import csv
import io
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from atlas_platform.context import request_id
from tenants.models import AuditEvent
from tenants.services.tokens import token_issue, token_revoke
from tenants.services.users import user_create, user_set_status

pytestmark = pytest.mark.django_db

LIST = "admin:tenants_auditevent_changelist"
EXPORT = "admin:tenants_auditevent_export"


@pytest.fixture
def trail(acme, globex, alice, charlie, acme_admin, acme_auditor):
    """Events in both tenants; two of Acme's share one request id."""
    with request_id("req-onboard-1"):
        user_create(tenant=acme, external_id="amy")
        token = token_issue(tenant=acme, user=alice, name="bot").token
    with request_id("req-other-2"):
        token_revoke(token=token)
        user_set_status(user=alice, status="disabled")
        user_create(tenant=globex, external_id="gus")
    old = AuditEvent.objects.filter(action="user.create", tenant=acme).first()
    assert old is not None
    return {"acme": acme, "globex": globex}


def listed(response) -> list[int]:
    return [event.pk for event in response.context["cl"].result_list]


def exported(client, query: dict[str, str]) -> list[dict[str, str]]:
    response = client.get(reverse(EXPORT), query)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    text = response.content.decode()
    return list(csv.DictReader(io.StringIO(text)))


@pytest.mark.parametrize(
    "query",
    [
        {},
        {"action__exact": "user.create"},
        {"request_id": "req-onboard-1"},
        {"actor_type__exact": "system"},
        {"actor_label": ""},
        {"q": "token"},
        {"created_from": "2000-01-01", "created_to": "2999-12-31", "o": "2"},
    ],
)
def test_the_csv_export_is_exactly_the_filtered_view(trail, acme_client, query):
    view = acme_client.get(reverse(LIST), query)
    assert view.status_code == 200
    every_page = list(view.context["cl"].queryset.values_list("pk", flat=True))

    rows = exported(acme_client, query)

    assert [r["action"] for r in rows] == [
        AuditEvent.objects.get(pk=pk).action for pk in every_page
    ]
    by_time = [(r["created_at"], r["request_id"], r["action"], r["target_id"]) for r in rows]
    assert by_time == [
        (e.created_at.isoformat(), e.request_id, e.action, e.target_id)
        for e in (AuditEvent.objects.get(pk=pk) for pk in every_page)
    ]
    assert all(r["tenant"] == "acme" for r in rows)  # scoped like the page


def test_the_request_id_links_related_events(trail, acme_client):
    page = acme_client.get(reverse(LIST)).content.decode()
    related = acme_client.get(reverse(LIST), {"request_id": "req-onboard-1"})

    assert 'href="?request_id=req-onboard-1"' in page
    assert {e.action for e in related.context["cl"].result_list} == {"user.create", "token.issue"}
    assert "Events of request" in related.content.decode()
    crumbs = re.search(r'<div class="breadcrumbs">(.*?)</div>', page, re.S)
    assert crumbs and " ".join(re.sub(r"<[^>]+>|&rsaquo;", " ", crumbs[1]).split()) == (
        "Home Audit Audit events"
    )  # the sidebar's section, not the app's label ("Tenants")


def test_filters_by_tenant_actor_action_user_and_time(trail, platform_client, alice):
    def ids(**query):
        return set(listed(platform_client.get(reverse(LIST), query)))

    acme_only = ids(tenant__id__exact=str(trail["acme"].pk))
    alices = ids(subject_user__id__exact=str(alice.pk))
    creates = ids(action__exact="user.create")
    future = ids(created_from=(datetime.now(UTC) + timedelta(days=1)).date().isoformat())
    today = ids(created_from=datetime.now(UTC).date().isoformat())

    events = AuditEvent.objects.in_bulk()
    assert acme_only and all(events[i].tenant_id == trail["acme"].pk for i in acme_only)
    assert alices and all(events[i].subject_user_id == alice.pk for i in alices)
    assert {AuditEvent.objects.get(pk=i).action for i in creates} == {"user.create"}
    assert future == set() and today >= acme_only
    assert ids(actor_label="nobody-like-this") == set()


def test_an_unreadable_time_is_refused_not_ignored(trail, acme_client):
    response = acme_client.get(reverse(LIST), {"created_from": "yesterday"})

    assert response.status_code == 302 and "e=1" in response.url


def test_the_export_is_scoped_and_open_to_auditors(trail, auditor_client, globex_admin):
    from tests.conftest import login

    acme_rows = exported(auditor_client, {})
    globex_rows = exported(login(globex_admin), {})

    assert acme_rows and {r["tenant"] for r in acme_rows} == {"acme"}
    assert {r["tenant"] for r in globex_rows} == {"globex"}
    # Filtering to the other tenant shows nothing, in the page and in the export.
    assert exported(auditor_client, {"tenant__id__exact": str(trail["globex"].pk)}) == []


def test_cells_a_spreadsheet_would_run_are_quoted(acme, acme_client):
    with request_id("=HYPERLINK(1)"):
        user_create(tenant=acme, external_id="sheet")

    rows = exported(acme_client, {"action__exact": "user.create"})

    assert rows[0]["request_id"] == "'=HYPERLINK(1)"


def test_the_trail_stays_append_only_in_the_admin(trail, platform_client):
    event = AuditEvent.objects.first()
    assert event is not None
    change = reverse("admin:tenants_auditevent_change", args=[event.pk])

    page = platform_client.get(reverse(LIST)).content.decode()
    response = platform_client.post(change, {"action": "tampered"})

    assert reverse("admin:tenants_auditevent_add") not in page  # no add link
    assert 'name="action"' not in page  # no bulk actions
    assert response.status_code == 403
    assert platform_client.get(reverse("admin:tenants_auditevent_add")).status_code == 403
    assert (
        platform_client.post(
            reverse("admin:tenants_auditevent_delete", args=[event.pk]), {"post": "yes"}
        ).status_code
        == 403
    )
    event.refresh_from_db()
    assert event.action != "tampered"


def test_the_tenant_column_is_shown_only_to_operators_of_several_tenants(
    trail, platform_client, acme_client, auditor_client
):
    url = reverse("admin:tenants_auditevent_changelist")

    assert 'column-tenant"' in platform_client.get(url).content.decode()
    for client in (acme_client, auditor_client):  # one tenant: the same word on every row
        page = client.get(url).content.decode()
        assert 'column-tenant"' not in page and 'column-request_link"' in page
