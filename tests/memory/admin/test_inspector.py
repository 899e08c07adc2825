"""The memory inspector: a user's memories by type, a real recall, chains, playbooks, and the
way into a forget request; read-only for auditors, another tenant's users are 404."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from memory.admin import inspector
from memory.models import RecallStat
from memory.selectors import memory_get
from memory.services import bookkeeping
from memory.services.writes import (
    memory_turn_record,
    memory_write,
    procedure_outcome_record,
)
from tenants.models import Tenant, User
from tenants.services.scoped_keys import scoped_key_provision

pytestmark = pytest.mark.django_db

PAGES = ["memories", "recall", "playbooks"]


@pytest.fixture
def store(settings: Any, tmp_path: Any):
    settings.ATLAS_MEMORY_BACKEND = "embedded"
    settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")
    yield
    bookkeeping.drain()


@pytest.fixture
def seeded(store, alice):
    """Alice's memories: two turns, a fact superseded by another, a playbook with outcomes."""
    memory_turn_record(user=alice, text="My Lumio Hub v2 keeps dropping wifi")
    memory_turn_record(user=alice, text="I moved to Edinburgh last month")
    old = memory_write(user=alice, text="Alice lives in Bristol", memory_type="semantic")
    new = memory_write(
        user=alice,
        text="Alice lives in Edinburgh",
        memory_type="semantic",
        supersedes=[old.id],
        contradiction="natural",
    )
    playbook = memory_write(
        user=alice,
        text="How to reset the Lumio Hub",
        memory_type="procedural",
        name="hub reset",
        trigger="hub offline",
        steps=["unplug the hub", "hold reset for 10 s"],
    )
    for success in (True, True, False):
        procedure_outcome_record(user=alice, memory_id=playbook.id, success=success)
    return {"old": old, "new": new, "playbook": playbook}


def url(name: str, user: User, *args: str) -> str:
    return reverse(f"admin:tenants_user_{name}", args=[user.pk, *args])


def test_the_user_page_links_to_the_inspector(store, alice, acme_client):
    page = acme_client.get(reverse("admin:tenants_user_change", args=[alice.pk])).content.decode()

    for name in PAGES:
        assert url(name, alice) in page


def test_memories_are_listed_by_type_with_filters(seeded, alice, acme_client):
    everything = acme_client.get(url("memories", alice)).content.decode()
    facts = acme_client.get(url("memories", alice), {"type": "semantic"}).content.decode()
    archived = acme_client.get(
        url("memories", alice), {"type": "semantic", "superseded": "only"}
    ).content.decode()
    current = acme_client.get(
        url("memories", alice), {"type": "semantic", "superseded": "current"}
    ).content.decode()

    assert "Lumio Hub v2 keeps dropping wifi" in everything and "hub reset" in everything
    assert "<strong>episodic</strong> 2" in everything  # the counts by type
    assert "Bristol" in facts and "lives in Edinburgh" in facts and "wifi" not in facts
    assert "Bristol" in archived and "lives in Edinburgh" not in archived
    assert "Bristol" not in current and "lives in Edinburgh" in current


def test_a_turns_session_shows_and_says_when_it_was_inferred(store, alice, acme_client):
    inferred = memory_turn_record(user=alice, text="sent as text only").episode
    memory_turn_record(user=alice, text="sent with its session", session_id="chat-1")

    page = acme_client.get(url("memories", alice), {"type": "episodic"}).content.decode()

    assert f'<span class="atlas-session">{inferred.session_id}</span>' in page
    assert page.count("(inferred)") == 1
    assert '<span class="atlas-session">chat-1</span></td>' in page


def test_the_time_filter_bounds_when_memories_were_stored(seeded, alice, acme_client):
    today = seeded["new"].created_at.date()

    before = acme_client.get(url("memories", alice), {"created_to": "2020-01-01"}).content.decode()
    on_the_day = acme_client.get(
        url("memories", alice), {"created_from": today, "created_to": today}
    ).content.decode()
    backwards = acme_client.get(
        url("memories", alice), {"created_from": today, "created_to": "2020-01-01"}
    ).content.decode()

    assert "No memories match." in before
    assert "Bristol" in on_the_day
    assert "The end is before the start." in backwards


def test_memories_page_forward_with_a_cursor(seeded, alice, acme_client, monkeypatch):
    monkeypatch.setattr(inspector, "PAGE_SIZE", 2)
    seen: list[str] = []
    response = acme_client.get(url("memories", alice))
    while True:
        seen += [row["data-id"] for row in rows(response.content.decode())]
        after = response.context["page"].next_cursor
        if after is None:
            break
        response = acme_client.get(url("memories", alice), {"after": after})

    assert len(seen) == len(set(seen)) == 5  # two turns, two facts, one playbook


def rows(page: str) -> list[dict[str, str]]:
    import re

    return [{"data-id": m} for m in re.findall(r'class="memory-row" data-id="([^"]+)"', page)]


def test_search_runs_a_real_recall_as_the_user_and_shows_how(seeded, alice, acme_client):
    bookkeeping.drain()  # the turns' recall statistics, written in a batch
    recalls_before = sum(RecallStat.objects.values_list("count", flat=True))  # the turns'

    response = acme_client.get(url("recall", alice), {"q": "Lumio Hub v2 wifi", "k": 5})
    page = response.content.decode()
    result = response.context["result"]

    assert result.legs == ["lexical", "dense"] and "lexical, dense" in page
    assert result.hits and "keeps dropping wifi" in page
    top = result.hits[0]
    # The two turns share an inferred session, so the spread may lend too ("session").
    searched = {leg: rank for leg, rank in top.leg_ranks.items() if leg != "session"}
    assert set(top.leg_ranks) <= {"lexical", "dense", "session"} and searched
    assert set(searched) <= set(top.leg_scores)
    for leg, rank in searched.items():  # each leg's own score, never a rounded 0.000
        assert top.leg_scores[leg] > 0
        assert f'<td class="leg-{leg}">{rank} ({top.leg_scores[leg]:.4g})</td>' in page
    assert 'id="reranked">no<' in page  # no reranker configured: the fused order stands
    for timing in result.timings_ms:
        assert timing in page
    # An operator's look is not use: no usage bumps, no recall statistics.
    bookkeeping.drain()
    assert memory_get(user=alice, memory_id=seeded["new"].id).use_count == 0
    assert sum(RecallStat.objects.values_list("count", flat=True)) == recalls_before == 2


def test_a_leg_score_keeps_its_significant_digits_and_a_missing_one_shows_no_number():
    cells = inspector.leg_cells({"lexical": 3, "dense": 1}, {"lexical": 4.2e-05, "dense": 0.91})
    assert cells == {"lexical": "3 (4.2e-05)", "dense": "1 (0.91)"}
    assert inspector.leg_cells({"lexical": 2}, {}) == {"lexical": "2", "dense": "—"}


def test_the_supersession_chain_shows_both_ways(seeded, alice, acme_client):
    for start in (seeded["old"], seeded["new"]):
        page = acme_client.get(url("memory_history", alice, start.id)).content.decode()

        assert page.index("Alice lives in Bristol") < page.index("Alice lives in Edinburgh")
        assert "superseded" in page and "current" in page


def test_a_chain_of_another_users_memory_is_not_found(seeded, alice, bob, acme_client):
    response = acme_client.get(url("memory_history", bob, seeded["new"].id))

    assert response.status_code == 404


def test_playbooks_show_their_success_and_failure_counts(seeded, alice, acme_client):
    page = acme_client.get(url("playbooks", alice)).content.decode()

    assert "hub reset" in page and "hold reset for 10 s" in page
    assert '<td class="successes">2</td>' in page and '<td class="failures">1</td>' in page


def test_forget_links_to_the_forget_request_form_when_there_is_one(
    seeded, alice, acme_client, auditor_client, monkeypatch
):
    def form_url(user, ids):
        return f"/forget?u={user.pk}&ids={','.join(ids)}"

    monkeypatch.setattr(inspector, "forget_request_url", form_url)
    ids = [seeded["old"].id, seeded["new"].id]

    admin_page = acme_client.get(url("memories", alice)).content.decode()
    auditor_page = auditor_client.get(url("memories", alice)).content.decode()
    response = acme_client.post(url("forget", alice), {"ids": ids})

    assert 'id="forget-selected"' in admin_page and 'name="ids"' in admin_page
    assert 'id="forget-selected"' not in auditor_page and 'name="ids"' not in auditor_page
    assert response.status_code == 302 and response.url == form_url(alice, ids)


def test_forget_leads_to_the_erasure_apps_form_prefilled(seeded, alice, acme_client):
    ids = [seeded["old"].id, seeded["new"].id]
    history = acme_client.get(url("memory_history", alice, seeded["new"].id)).content.decode()

    response = acme_client.post(url("forget", alice), {"ids": ids})
    form = acme_client.get(response.url).content.decode()

    assert response.status_code == 302
    assert response.url.startswith(reverse("admin:erasure_forgetrequest_add"))
    assert 'id="forget-chain"' in history
    assert f'<option value="{alice.pk}" selected>' in form
    assert all(memory_id in form for memory_id in ids)


def test_without_the_erasure_app_there_is_no_forget_button(seeded, alice, acme_client, monkeypatch):
    monkeypatch.setattr(inspector, "forget_request_url", lambda user, ids: None)
    page = acme_client.get(url("memories", alice)).content.decode()
    history = acme_client.get(url("memory_history", alice, seeded["new"].id)).content.decode()
    response = acme_client.post(url("forget", alice), {"ids": [seeded["new"].id]}, follow=True)

    assert "forget-selected" not in page and "forget-chain" not in history
    assert "not available" in response.content.decode()


def test_forget_refuses_bad_ids(seeded, alice, acme_client, monkeypatch):
    monkeypatch.setattr(inspector, "forget_request_url", lambda user, ids: "/forget")

    response = acme_client.post(url("forget", alice), {"ids": ["../../etc"]}, follow=True)

    assert "Select the memories to forget." in response.content.decode()


@pytest.mark.parametrize("name", [*PAGES, "memory_history"])
def test_auditors_see_the_pages_without_action_buttons(
    seeded, alice, auditor_client, name, monkeypatch
):
    monkeypatch.setattr(inspector, "forget_request_url", lambda user, ids: "/forget")
    args = [seeded["new"].id] if name == "memory_history" else []

    page = auditor_client.get(url(name, alice, *args)).content.decode()

    assert "alice" in page and "read-only" in page
    assert 'name="ids"' not in page and 'href="/forget' not in page
    assert "forget-selected" not in page and "forget-chain" not in page


@pytest.mark.parametrize("name", [*PAGES, "forget", "memory_history"])
def test_auditors_posting_anyway_are_refused(seeded, alice, auditor_client, name):
    args = [seeded["new"].id] if name == "memory_history" else []

    response = auditor_client.post(url(name, alice, *args), {"ids": [seeded["new"].id]})

    assert response.status_code == 403


@pytest.mark.parametrize("name", PAGES)
def test_the_read_only_pages_take_no_posts_from_admins_either(store, alice, acme_client, name):
    assert acme_client.post(url(name, alice)).status_code == 405


@pytest.mark.parametrize("name", [*PAGES, "forget", "memory_history"])
def test_another_tenants_user_is_not_found_on_every_page(store, charlie, acme_client, name):
    args = ["0123abcd"] if name == "memory_history" else []

    assert acme_client.get(url(name, charlie, *args)).status_code == 404
    assert acme_client.post(url(name, charlie, *args), {"ids": ["a"]}).status_code == 404


def test_a_platform_admin_reaches_every_tenants_inspector(store, charlie, platform_client):
    assert platform_client.get(url("memories", charlie)).status_code == 200


def test_on_a_dls_tenant_the_inspector_reads_with_the_users_key(es, settings, acme_client):
    settings.ATLAS_MEMORY_BACKEND = "elasticsearch"
    acme = Tenant.objects.get(slug="acme")
    acme.isolation_mode = Tenant.IsolationMode.DLS
    acme.save()
    dana = User.objects.create(tenant=acme, external_id="dana")
    page_without_key = acme_client.get(url("memories", dana)).content.decode()
    scoped_key_provision(user=dana)
    memory_write(user=dana, text="Dana prefers the Oslo office", memory_type="semantic")

    page = acme_client.get(url("memories", dana)).content.decode()
    found = acme_client.get(url("recall", dana), {"q": "Oslo office"}).content.decode()

    assert "no scoped cluster key" in page_without_key  # refused, never read as the platform
    assert "Dana prefers the Oslo office" in page and "Dana prefers the Oslo office" in found
    bookkeeping.drain()
