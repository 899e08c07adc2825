"""Every read of a named person's data by an operator or a token is one audit event (actor,
subject, what, request id), a burst of the same read is one event, refusals are audited too,
and the trail lists and filters them."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from agents.models import Agent
from memory.services import bookkeeping
from memory.services.writes import memory_write
from tenants.models import AuditEvent
from tenants.services.audit import query_digest
from tests.atlas_server.conftest import tenant_token, user_token

pytestmark = pytest.mark.django_db
SECRET_QUERY = "where does Alice live now"


@pytest.fixture
def store(settings, tmp_path):
    settings.ATLAS_MEMORY_BACKEND = "embedded"
    settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")
    yield
    bookkeeping.drain()


@pytest.fixture
def seeded(store, alice):
    old = memory_write(user=alice, text="Alice lives in Bristol", memory_type="semantic")
    new = memory_write(
        user=alice, text="Alice lives in Edinburgh", memory_type="semantic", supersedes=[old.id]
    )
    memory_write(
        user=alice, text="How to reset the hub", memory_type="procedural", name="hub reset"
    )
    return {"old": old, "new": new}


def export(client, token: str):
    return client.get("/api/v1/users/alice/export", HTTP_AUTHORIZATION=f"Bearer {token}")


def reads(**filters) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action__startswith="read.", **filters))


def inspector(name: str, user, *args: str) -> str:
    return reverse(f"admin:tenants_user_{name}", args=[user.pk, *args])


def test_the_inspector_list_is_one_event_and_a_burst_of_pages_stays_one(
    seeded, alice, acme_client, settings
):
    settings.ATLAS_AUDIT_READ_WINDOW_S = 300
    first = acme_client.get(inspector("memories", alice), HTTP_X_REQUEST_ID="req-inspect-0001")
    for n in range(40):  # paging, filtering, reloading: a burst
        acme_client.get(inspector("memories", alice), {"type": "semantic", "after": str(n)})

    events = reads(action="read.memories")
    assert first.status_code == 200 and len(events) == 1
    event = events[0]
    assert (event.actor_type, event.actor_label) == ("operator", "acme-admin")
    assert event.subject_user_id == alice.pk and event.tenant_id == alice.tenant_id
    assert event.request_id == "req-inspect-0001" and event.metadata["page"] == "memories"
    assert event.metadata["coalesced_s"] == 300


def test_each_kind_of_inspector_read_writes_exactly_one_event(seeded, alice, acme_client):
    acme_client.get(inspector("playbooks", alice))
    acme_client.get(inspector("recall", alice), {"q": SECRET_QUERY})
    acme_client.get(inspector("memory_history", alice, seeded["new"].id))

    by_action = {e.action: e for e in reads()}
    assert sorted(by_action) == ["read.history", "read.memories", "read.recall"]
    assert by_action["read.memories"].metadata["page"] == "playbooks"
    assert by_action["read.history"].target_id == seeded["new"].id
    recall = by_action["read.recall"]
    # The query is kept as its hash (checkable), never as text: audit rows are never erased.
    assert recall.metadata["query_sha256"] == query_digest(SECRET_QUERY)
    assert recall.metadata["hits"] >= 1
    assert SECRET_QUERY not in json.dumps(recall.metadata)


def test_a_recall_burst_is_one_event_per_distinct_query(seeded, alice, acme_client):
    for _ in range(5):
        acme_client.get(inspector("recall", alice), {"q": SECRET_QUERY})
    acme_client.get(inspector("recall", alice), {"q": "hub reset"})

    digests = [e.metadata["query_sha256"] for e in reads(action="read.recall")]
    assert sorted(digests) == sorted([query_digest(SECRET_QUERY), query_digest("hub reset")])


def test_another_operator_reading_the_same_user_is_its_own_event(
    seeded, alice, acme_client, auditor_client
):
    acme_client.get(inspector("memories", alice))
    auditor_client.get(inspector("memories", alice))

    assert sorted(e.actor_label for e in reads()) == ["acme-admin", "acme-auditor"]


def test_with_no_window_every_read_is_an_event(seeded, alice, acme_client, settings):
    settings.ATLAS_AUDIT_READ_WINDOW_S = 0
    for _ in range(3):
        acme_client.get(inspector("memories", alice))

    assert len(reads(action="read.memories")) == 3


def test_a_page_that_failed_to_read_writes_no_read_event(store, charlie, acme_client):
    assert acme_client.get(inspector("memories", charlie)).status_code == 404
    assert reads() == []


def test_every_export_is_an_event_of_the_token_that_exported(store, client, alice, acme):
    memory_write(user=alice, text="Alice's passport number is 123", memory_type="semantic")
    token = tenant_token(acme, allow_export=True)  # a tenant token exports with the right

    responses = [export(client, token) for _ in range(2)]

    assert all(r.status_code == 200 for r in responses)
    events = reads(action="read.export")
    assert len(events) == 2
    assert {(e.actor_type, e.actor_label, e.subject_user_id) for e in events} == {
        ("token", "acme fleet", alice.pk)
    }
    disposition = responses[0]["Content-Disposition"]
    assert disposition.startswith('attachment; filename="atlas-export-alice-')
    assert disposition.endswith('.json"')


def test_a_users_own_token_exporting_is_audited_too(store, client, alice):
    assert export(client, user_token(alice)).status_code == 200

    assert [e.actor_label for e in reads(action="read.export")] == ["alice bot"]


def test_agents_and_knowledge_records_read_through_the_admin_are_events(alice, acme_client):
    agent = Agent.objects.create(user=alice, slug="claude-code")
    page = reverse("admin:agents_agent_change", args=[agent.pk])

    for _ in range(3):
        assert acme_client.get(page).status_code == 200

    (event,) = reads(action="read.record")
    assert (event.target_type, event.target_id) == ("agents.agent", str(agent.pk))
    assert event.subject_user_id == alice.pk


def test_a_forbidden_page_is_an_audited_refusal(store, alice, auditor_client):
    refused = auditor_client.post(inspector("forget", alice), {"ids": ["m1"]})

    assert refused.status_code == 403
    (event,) = AuditEvent.objects.filter(action="refused.page")
    assert event.actor_label == "acme-auditor" and event.tenant_id == alice.tenant_id
    assert event.metadata["method"] == "POST" and event.target_id.endswith("/memories/forget/")


def test_the_trail_filters_reads_and_refusals_and_shows_seconds_and_whole_ids(
    seeded, alice, acme_client, auditor_client
):
    acme_client.get(inspector("memories", alice), HTTP_X_REQUEST_ID="req-a-very-long-request-id")
    auditor_client.post(inspector("forget", alice), {"ids": ["m1"]})
    listing = reverse("admin:tenants_auditevent_changelist")

    only_reads = acme_client.get(listing, {"kind": "read"})
    only_refusals = acme_client.get(listing, {"kind": "refused"})
    changes = acme_client.get(listing, {"kind": "change"})

    def actions(response) -> set[str]:
        return {e.action for e in response.context["cl"].result_list}

    assert actions(only_reads) == {"read.memories"}
    assert actions(only_refusals) == {"refused.page"}
    assert actions(changes) and not any(
        a.startswith(("read.", "refused.")) for a in actions(changes)
    )
    html = only_reads.content.decode()
    event = reads()[0]
    assert event.created_at.strftime("%Y-%m-%d %H:%M:%S") in html
    assert "<code>req-a-very-long-request-id</code>" in html
