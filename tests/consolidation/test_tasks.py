"""The Celery task layer (run in-process here; test_worker.py proves the real worker path):
transient failures retry, then the run fails cleanly; the daily task sweeps."""

from __future__ import annotations

import pytest

from consolidation.models import ConsolidationRun
from consolidation.services.triggers import consolidation_request
from consolidation.tasks import consolidation_daily, consolidation_execute
from tests.consolidation.conftest import say
from tests.consolidation.fake_llm import Status

pytestmark = pytest.mark.usefixtures("store")


@pytest.fixture
def quick_retries(settings):
    settings.ATLAS_CONSOLIDATION_TASK_RETRIES = 1
    settings.ATLAS_CONSOLIDATION_RETRY_BACKOFF_S = 0.01


def test_a_model_outage_is_retried_by_the_task_then_the_run_fails(alice, chat, quick_retries):
    say(alice, "I like chess")
    run = consolidation_request(user=alice, trigger="on_demand").run
    chat.default = Status(503)

    consolidation_execute.apply(args=[run.pk])

    run.refresh_from_db()
    assert run.status == "failed" and "503" in run.error and run.attempts == 2
    assert len(chat.requests) == 4  # two task attempts, each with one client retry


def test_a_model_that_recovers_on_the_task_retry_completes_the_run(alice, chat, quick_retries):
    [ep] = say(alice, "I like chess")
    run = consolidation_request(user=alice, trigger="on_demand").run
    good = {"new_facts": [{"text": "Alice likes chess", "confidence": 0.9,
                           "supporting_episode_ids": [ep.id]}]}  # fmt: skip
    chat.script = [Status(503), Status(503), good]

    consolidation_execute.apply(args=[run.pk])

    run.refresh_from_db()
    assert run.status == "done" and run.facts_written == 1 and run.attempts == 2


def test_the_daily_task_queues_runs(alice, chat):
    say(alice, "hello")

    assert consolidation_daily.apply().get() == 1
    assert ConsolidationRun.objects.get().trigger == "daily"
