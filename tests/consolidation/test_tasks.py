"""The Celery task layer (run in-process here; test_worker.py proves the real worker path):
transient failures retry, then the run fails cleanly; the daily task sweeps."""

from __future__ import annotations

import time

import pytest

from consolidation.models import ConsolidationRun
from consolidation.services.triggers import consolidation_request
from consolidation.tasks import consolidation_daily, consolidation_execute
from tests.consolidation.conftest import say
from tests.consolidation.fake_llm import Delay, Status

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


@pytest.mark.django_db(transaction=True)
def test_without_a_broker_the_turn_does_not_wait_for_the_model(alice, chat, settings):
    """Eager mode (`make run`): the run goes to a background thread, not the turn."""
    from atlas_platform.celery import app

    alice.tenant.consolidation_every_n_episodes = 2
    alice.tenant.save()
    chat.script = [Delay(1.5, {"new_facts": []})]
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        say(alice, "one", "two")
        run = ConsolidationRun.objects.get(user=alice)
        assert run.status in ("queued", "running")  # the model is still answering
        deadline = time.monotonic() + 30
        while run.status not in ("done", "failed") and time.monotonic() < deadline:
            time.sleep(0.1)
            run.refresh_from_db()
    finally:
        app.conf.task_always_eager = eager
    assert run.status == "done" and run.episodes_in == 2 and len(chat.requests) == 1
