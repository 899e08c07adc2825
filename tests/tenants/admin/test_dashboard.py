"""The tenant dashboard: memories by type and their growth, recall volume and latency, key
ages against the rotation policy; charts as inline SVG; scoped and read-only."""

from __future__ import annotations

import dataclasses
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import SafeString

from atlas_platform.config import ChatModelSettings
from memory.admin import dashboard as memory_dashboard
from memory.models import OVERFLOW_MS, RecallStat
from memory.selectors import histogram_percentile, recall_stats
from memory.services import bookkeeping
from memory.services.recall import memory_recall
from memory.services.recall_stats import latency_bucket, recall_stat_note, recall_stats_flush
from memory.services.writes import memory_turn_record, memory_write
from tenants.admin import dashboard
from tenants.models import ScopedKey, User

pytestmark = pytest.mark.django_db


@pytest.fixture
def store(settings: Any, tmp_path: Any):
    settings.ATLAS_MEMORY_BACKEND = "embedded"
    settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")
    yield
    bookkeeping.drain()


def board(tenant) -> str:
    return reverse("admin:tenants_tenant_dashboard", args=[tenant.pk])


def test_the_dashboard_charts_memories_by_type_and_growth(store, acme, alice, bob, acme_client):
    memory_turn_record(user=alice, text="first turn")
    memory_turn_record(user=bob, text="second turn")
    memory_write(user=alice, text="Alice likes tea", memory_type="semantic")

    response = acme_client.get(board(acme))
    page = response.content.decode()

    assert response.status_code == 200
    assert 'id="panel-memories"' in page and "<svg" in page
    totals = page[page.index('class="atlas-totals"') :]
    assert "<td>2</td><td>1</td><td>0</td><td>0</td><td><strong>3</strong>" in totals
    assert "New memories per week" in page and "2 episodic" in page  # the bar's <title>
    monthly = acme_client.get(board(acme), {"bucket": "month"}).content.decode()
    assert "New memories per month" in monthly


def test_bucket_starts_cover_the_last_weeks_and_months():
    today = date(2026, 1, 14)  # a Wednesday

    assert memory_dashboard.bucket_starts("week", today, 3) == [
        date(2025, 12, 29),
        date(2026, 1, 5),
        date(2026, 1, 12),
    ]
    assert memory_dashboard.bucket_starts("month", today, 3) == [
        date(2025, 11, 1),
        date(2025, 12, 1),
        date(2026, 1, 1),
    ]


def test_recalls_are_counted_per_tenant_with_latency_percentiles(
    store, acme, alice, charlie, acme_client
):
    memory_write(user=alice, text="Alice likes tea", memory_type="semantic")
    for _ in range(3):
        memory_recall(user=alice, query="tea")
    memory_recall(user=charlie, query="tea")
    bookkeeping.drain()  # the counts are written in batches (memory/services/recall_stats.py)

    summary = recall_stats(tenant=acme)
    page = acme_client.get(board(acme)).content.decode()

    assert summary.count == 3 and summary.days[-1].count == 3
    assert summary.p50_ms is not None and summary.p95_ms is not None
    assert summary.p50_ms <= summary.p95_ms
    assert '<strong id="recall-count">3</strong>' in page
    assert "Recall latency per day" in page and "p95" in page


def test_recording_recalls_is_one_upsert_per_bucket(acme, settings, django_assert_num_queries):
    settings.ATLAS_RECALL_STATS_FLUSH_S = 3600  # the counts wait for the flush below
    at = datetime(2026, 5, 1, 10, 42, tzinfo=UTC)
    recall_stat_note(tenant_id=acme.pk, took_ms=7.0, at=at)
    recall_stat_note(tenant_id=acme.pk, took_ms=9.0, at=at + timedelta(minutes=5))
    recall_stat_note(tenant_id=acme.pk, took_ms=60_000.0, at=at)
    with django_assert_num_queries(2):  # the tenant still exists; the upserts, in one batch
        recall_stats_flush()

    rows = {r.le_ms: r for r in RecallStat.objects.filter(tenant=acme)}

    assert rows[10].count == 2 and rows[10].total_ms == 16.0
    assert rows[10].hour == at.replace(minute=0)
    assert rows[OVERFLOW_MS].count == 1


def test_percentiles_come_from_the_histogram():
    assert latency_bucket(0.4) == 5 and latency_bucket(5.0) == 5 and latency_bucket(5.1) == 10
    assert histogram_percentile({}, 0.5) is None
    # 10 recalls: 5 in (0, 5], 5 in (5, 10]: the median is the top of the first bucket.
    assert histogram_percentile({5: 5, 10: 5}, 0.5) == 5.0
    assert histogram_percentile({5: 5, 10: 5}, 0.95) == 9.5
    assert histogram_percentile({10000: 1, OVERFLOW_MS: 9}, 0.95) == 10000.0


def test_keys_past_their_renewal_are_flagged_against_the_settings_lifetime(
    es, settings, acme, acme_client
):
    from tenants.services.scoped_keys import scoped_key_provision

    settings.ATLAS_SCOPED_KEY_TTL_DAYS = 7.0
    settings.ATLAS_SCOPED_KEY_RENEW_DAYS = 2.0
    acme.isolation_mode = "dls"  # its reads need keys: a missing one is flagged
    acme.save()
    fresh, old = (User.objects.create(tenant=acme, external_id=n) for n in ("fresh", "oldkey"))
    User.objects.create(tenant=acme, external_id="nokey")
    for user in (fresh, old):
        scoped_key_provision(user=user)
    ScopedKey.objects.filter(user=old).update(created_at=timezone.now() - timedelta(days=6))

    page = acme_client.get(board(acme)).content.decode()
    table = page[page.index('id="key-ages"') :]

    assert "keys expire after 7 days and are renewed hourly from 5 days of age" in page
    assert "rotation policy" not in page
    assert "2 users need a key renewed or provisioned." in page
    assert table.index("oldkey") < table.index("fresh")  # oldest first
    assert "6 d" in table and "stale" in table and "missing" in table
    assert "renewal overdue" in page  # the age chart's bucket


def test_a_key_pending_invalidation_is_shown_in_words(es, acme, acme_client):
    from tenants.services.scoped_keys import scoped_key_provision, scoped_key_rotate

    acme.isolation_mode = "dls"
    acme.save()
    user = User.objects.create(tenant=acme, external_id="rotating")
    scoped_key_provision(user=user)
    scoped_key_rotate(user=user)
    # The state a rotation leaves while the old key's invalidation has not gone through yet.
    ScopedKey.objects.filter(user=user).exclude(status=ScopedKey.Status.ACTIVE).update(
        status=ScopedKey.Status.PENDING_INVALIDATION
    )

    page = acme_client.get(board(acme)).content.decode()
    table = page[page.index('id="key-ages"') :]

    assert "pending invalidation" in table
    assert "pendinginvalidation" not in page and "pending_invalidation" not in table


def test_a_filter_tenant_is_not_told_its_users_need_keys(es, acme, alice, acme_client):
    page = acme_client.get(board(acme)).content.decode()

    assert "Every key is within its lifetime." in page
    assert "need a key" not in page


def test_without_a_cluster_the_dashboard_has_no_key_panel(
    store, no_cluster, acme, alice, acme_client
):
    page = acme_client.get(board(acme)).content.decode()

    assert 'id="panel-keys"' not in page and "Scoped key" not in page
    assert "need a key" not in page and 'id="key-ages"' not in page


def test_a_panel_that_fails_says_so_instead_of_breaking_the_page(
    store, acme, acme_client, monkeypatch
):
    from atlas_platform.exceptions import AtlasError

    def broken(**kwargs):
        raise AtlasError("the store is down")

    monkeypatch.setattr(memory_dashboard, "tenant_memory_growth", broken)

    page = acme_client.get(board(acme)).content.decode()

    assert "Not available: the store is down" in page and 'id="panel-recall"' in page


def test_panels_come_from_the_registry(store, acme, acme_client, monkeypatch):
    def forget_requests(request, tenant):
        return dashboard.Panel("forget", "Open forget requests", SafeString("none open"))

    monkeypatch.setattr(dashboard, "PANELS", [*dashboard.PANELS, forget_requests])

    page = acme_client.get(board(acme)).content.decode()

    assert 'id="panel-forget"' in page and "Open forget requests" in page


def test_the_tenant_pages_link_to_the_dashboard(store, acme, acme_client):
    listing = acme_client.get(reverse("admin:tenants_tenant_changelist")).content.decode()
    detail = acme_client.get(
        reverse("admin:tenants_tenant_change", args=[acme.pk])
    ).content.decode()

    assert board(acme) in listing and board(acme) in detail


def test_another_tenants_dashboard_is_not_found(store, acme, globex, acme_client, auditor_client):
    assert acme_client.get(board(globex)).status_code == 404
    assert auditor_client.get(board(globex)).status_code == 404
    assert acme_client.post(board(globex)).status_code == 404


def test_auditors_see_the_dashboard_but_may_not_post(store, acme, auditor_client, acme_client):
    assert auditor_client.get(board(acme)).status_code == 200
    assert auditor_client.post(board(acme)).status_code == 403
    assert acme_client.post(board(acme)).status_code == 405


def test_a_platform_admin_sees_every_dashboard(store, globex, platform_client):
    assert platform_client.get(board(globex)).status_code == 200


def test_open_forget_requests_have_a_panel(store, acme, alice, bob, acme_admin, acme_client):
    from erasure.models import ForgetRequest
    from erasure.services.requests import (
        OperatorPrincipal,
        forget_request_open,
        forget_request_reject,
    )
    from tenants.scoping import scope_for

    scope = scope_for(acme_admin.account)
    assert scope is not None
    by = OperatorPrincipal(acme_admin.account, scope)
    opened = forget_request_open(
        reason="the subject asked", ticket="DPO-1", user=alice, scope="user", by=by
    )
    closed = forget_request_open(
        reason="the subject asked", ticket="DPO-1", user=bob, scope="user", by=by
    )
    forget_request_reject(request=closed, by=by, reason="duplicate")

    page = acme_client.get(board(acme)).content.decode()

    panel = page[page.index('id="panel-forget-requests"') :]
    assert "1 open request" in panel
    assert f"#{opened.pk}</a>" in panel and f"#{closed.pk}</a>" not in panel
    assert "pending: 1 requests" in panel and "rejected: 1 requests" in panel  # bar titles
    assert ForgetRequest.objects.filter(tenant=acme).count() == 2


def test_consolidation_runs_and_tokens_have_a_panel(store, acme, alice, acme_client, settings):
    from consolidation.models import ConsolidationRun

    settings.ATLAS_CHAT_MODEL = ChatModelSettings()
    ConsolidationRun.objects.create(
        tenant=acme,
        user=alice,
        trigger="on_demand",
        status="done",
        prompt_tokens=120,
        completion_tokens=30,
        facts_written=2,
    )
    ConsolidationRun.objects.create(
        tenant=acme,
        user=alice,
        trigger="daily",
        status="failed",
        prompt_tokens=50,
    )

    page = acme_client.get(board(acme)).content.decode()

    panel = page[page.index('id="panel-consolidation"') :]
    assert "Consolidation is off" in panel
    assert '<strong id="consolidation-runs">2</strong>' in panel
    assert '<strong id="consolidation-tokens">200</strong>' in panel
    assert "Consolidation runs per day" in panel and "1 failed" in panel
    assert panel.count('class="run-row"') == 2


def test_a_tenant_admin_lands_on_their_dashboard(store, acme, acme_client, auditor_client):
    for client in (acme_client, auditor_client):
        response = client.get(reverse("admin:index"))
        assert response.status_code == 302 and response["Location"] == board(acme)


def test_the_index_and_sidebar_link_every_dashboard(store, acme, globex, platform_client):
    index = platform_client.get(reverse("admin:index")).content.decode()
    listing = platform_client.get(reverse("admin:tenants_user_changelist")).content.decode()

    for page in (index, listing):  # the index's app list and the sidebar's
        assert board(acme) in page and board(globex) in page
        assert "Dashboards" in page


def test_charts_colour_states_by_meaning_and_follow_the_theme():
    from tenants.admin import charts

    svg = str(charts.stacked_bars("Runs per day", ["1 Dec"], {"failed": [1], "done": [2]}))

    assert 'fill="#c94a3f"><title>1 Dec: 1 failed' in svg  # failed is red, first or not
    assert 'fill="#2e7d32"><title>1 Dec: 2 done' in svg
    assert ">Runs per day</text>" in svg  # a visible title
    assert "<text" in svg and all(
        'fill="currentColor"' in t for t in svg.split("<text")[1:]
    )  # labels take the theme's text colour (readable in dark mode)


def test_charts_fill_their_panel_with_gridlines_and_no_dark_on_dark_series():
    from tenants.admin import charts

    svg = charts.stacked_bars("Keys by age", ["a", "b"], {"keys": [4, 8]})

    assert svg.count('class="grid"') == charts.GRID_STEPS - 1  # gridlines at quarters
    assert ">2<" in svg and ">4<" in svg and ">6<" in svg  # each labelled with its value
    assert "#417690" not in svg  # the admin's dark blue sank into the dark theme
    small = charts.stacked_bars("One", ["a"], {"n": [1]})
    assert ">0.25<" in small and ">0.5<" in small and ">0.75<" in small
    assert 'viewBox="0 0' in svg


def test_a_latency_chart_with_one_or_two_days_of_data_is_lines_over_gridlines():
    from tenants.admin import charts

    days = ["1 Dec", "2 Dec", "3 Dec", "4 Dec"]
    one_day = str(
        charts.lines(
            "Latency", days, {"p50": [None, 4.0, None, None], "p95": [None, 9.0, None, None]}, " ms"
        )
    )
    assert one_day.count("<polyline") == 2  # p50 and p95 each a level line, not a lone dot
    assert one_day.count("<circle") == 2  # the exact figures still hover on their day
    assert one_day.count('class="grid"') == charts.GRID_STEPS - 1
    p50 = one_day.split("<polyline", 2)[1]
    (x1, y1), (x2, y2) = (map(float, pt.split(",")) for pt in p50.split('"')[1].split())
    assert y1 == y2 and x2 > x1  # a level segment across the day

    two_days = str(charts.lines("Latency", days, {"p50": [3.0, None, None, 6.0]}, " ms"))
    assert two_days.count("<polyline") == 1 and two_days.count("<circle") == 2
    assert len(two_days.split("<polyline", 1)[1].split('"')[1].split()) == 2  # joins the gap
    assert two_days.count('class="grid"') == charts.GRID_STEPS - 1


def test_the_consolidation_panel_is_hidden_while_consolidation_is_off_and_idle(
    store, acme, alice, acme_client, settings
):
    from consolidation.models import ConsolidationRun

    settings.ATLAS_CHAT_MODEL = dataclasses.replace(
        settings.ATLAS_CHAT_MODEL, base_url=""
    )  # no model: off
    assert 'id="panel-consolidation"' not in acme_client.get(board(acme)).content.decode()

    settings.ATLAS_CHAT_MODEL = dataclasses.replace(
        settings.ATLAS_CHAT_MODEL, base_url="http://127.0.0.1:9/v1", model="some-model"
    )
    assert 'id="panel-consolidation"' in acme_client.get(board(acme)).content.decode()

    acme.consolidation_every_n_episodes, acme.consolidation_daily = 0, False  # neither trigger
    acme.save(update_fields=["consolidation_every_n_episodes", "consolidation_daily"])
    assert 'id="panel-consolidation"' not in acme_client.get(board(acme)).content.decode()

    ConsolidationRun.objects.create(tenant=acme, user=alice, trigger="on_demand", status="done")
    assert 'id="panel-consolidation"' in acme_client.get(board(acme)).content.decode()


def test_every_series_colour_stands_out_on_the_light_and_the_dark_background():
    """WCAG 2.1's 3:1 for graphical objects against Django's light (#fff) and dark (#121212)
    page backgrounds (the browser test measures the computed colours on the page)."""
    from tenants.admin import charts

    def luminance(colour: str) -> float:
        def linear(v: int) -> float:
            c = v / 255
            return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

        r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
        return 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b)

    def contrast(a: str, b: str) -> float:
        high, low = sorted((luminance(a), luminance(b)), reverse=True)
        return (high + 0.05) / (low + 0.05)

    colours = {*charts.PALETTE, *charts.STATE_COLOURS.values()}
    faint = {
        (colour, background): round(contrast(colour, background), 2)
        for colour in colours
        for background in ("#ffffff", "#121212")
        if contrast(colour, background) < 3.0
    }
    assert faint == {}
