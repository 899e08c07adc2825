"""The admin: runs (tenant-scoped, token use per tenant, model status), the user action."""

from __future__ import annotations

import pytest
from django.urls import reverse

from consolidation.models import ConsolidationRun
from consolidation.selectors import tenant_token_usage

pytestmark = pytest.mark.usefixtures("store")
RUNS = reverse("admin:consolidation_consolidationrun_changelist")


def finished_run(user, prompt, completion):
    return ConsolidationRun.objects.create(
        tenant=user.tenant,
        user=user,
        trigger="daily",
        status="done",
        prompt_tokens=prompt,
        completion_tokens=completion,
    )


def test_runs_show_tokens_and_token_use_per_tenant(acme_client, alice, bob, charlie, chat):
    finished_run(alice, 1000, 200)
    finished_run(bob, 500, 100)
    finished_run(charlie, 7000, 7)

    page = acme_client.get(RUNS).content.decode()

    assert "Acme: 1800 tokens in 2 runs (1500 prompt, 300 completion)." in page
    assert "1200" in page and "600" in page  # per-run totals
    assert "charlie" not in page and "Globex" not in page and "7007" not in page
    assert "Consolidation model test-consolidator" in page
    usage = tenant_token_usage(alice.tenant)
    assert (usage.runs, usage.total_tokens) == (2, 1800)


def test_without_a_model_the_admin_says_consolidation_is_off(acme_client, alice, no_model):
    page = acme_client.get(RUNS).content.decode()

    assert "Consolidation is off: no chat model is configured" in page


def test_another_tenants_run_is_not_reachable(acme_client, charlie, chat):
    theirs = finished_run(charlie, 1, 1)

    response = acme_client.get(
        reverse("admin:consolidation_consolidationrun_change", args=[theirs.pk])
    )

    assert response.status_code in (302, 404)


def test_the_user_action_queues_a_run(acme_client, alice, chat):
    response = acme_client.post(
        reverse("admin:tenants_user_changelist"),
        {"action": "consolidate", "_selected_action": [alice.pk]},
        follow=True,
    )

    assert "Consolidation queued for: alice." in response.content.decode()
    assert ConsolidationRun.objects.get().trigger == "on_demand"


def test_the_user_action_reports_consolidation_off(acme_client, alice, no_model):
    response = acme_client.post(
        reverse("admin:tenants_user_changelist"),
        {"action": "consolidate", "_selected_action": [alice.pk]},
        follow=True,
    )

    assert "no chat model is configured" in response.content.decode()
    assert not ConsolidationRun.objects.exists()


def test_an_auditor_cannot_queue_runs(auditor_client, alice, chat):
    auditor_client.post(
        reverse("admin:tenants_user_changelist"),
        {"action": "consolidate", "_selected_action": [alice.pk]},
    )

    assert not ConsolidationRun.objects.exists()


def test_the_runs_page_does_not_grow_queries_with_runs(acme_client, alice, bob, chat):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    finished_run(alice, 1, 1)
    with CaptureQueriesContext(connection) as few:
        acme_client.get(RUNS)
    for n in range(6):
        finished_run(bob if n % 2 else alice, n, n)
    with CaptureQueriesContext(connection) as many:
        acme_client.get(RUNS)

    assert len(many) == len(few)
