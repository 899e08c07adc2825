"""When consolidation runs: after N episodes (counted on the turn path), daily, on demand; one
active run per user; the lease that expires if a worker dies; off without a model."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from atlas_platform.exceptions import Conflict
from consolidation.models import ConsolidationRun, ConsolidationState, PlaybookSuggestion
from consolidation.services.errors import ConsolidationOff, UserBusy
from consolidation.services.run import consolidation_run
from consolidation.services.state import lease_acquire
from consolidation.services.triggers import consolidation_daily_sweep, consolidation_request
from memory.services.writes import memory_write
from tenants.models import AuditEvent
from tests.consolidation.conftest import say

pytestmark = pytest.mark.usefixtures("store")


def test_the_nth_episode_queues_one_run_on_commit(alice, chat, django_capture_on_commit_callbacks):
    alice.tenant.consolidation_every_n_episodes = 3
    alice.tenant.save()

    say(alice, "one", "two")
    assert not ConsolidationRun.objects.exists()
    with django_capture_on_commit_callbacks() as queued:
        say(alice, "three")
    say(alice, "four")  # a run is already queued: no second one

    [run] = ConsolidationRun.objects.filter(user=alice)
    assert run.trigger == "episodes" and run.status == "queued"
    assert len(queued) == 1  # the task is sent only once the run row commits
    assert ConsolidationState.objects.get(user=alice).pending_episodes == 4
    assert AuditEvent.objects.filter(action="consolidation.request", subject_user=alice).exists()


def test_episodes_are_counted_per_user(alice, bob, chat):
    alice.tenant.consolidation_every_n_episodes = 2
    alice.tenant.save()

    say(alice, "one")
    say(bob, "one", "two")

    assert ConsolidationState.objects.get(user=alice).pending_episodes == 1
    assert [r.user for r in ConsolidationRun.objects.all()] == [bob]


def test_n_zero_means_never_on_count(alice, chat):
    alice.tenant.consolidation_every_n_episodes = 0
    alice.tenant.save()

    say(alice, *[f"message {n}" for n in range(12)])

    assert not ConsolidationRun.objects.exists()


def test_playbooks_a_turn_recalled_are_remembered_for_the_next_run(alice, chat):
    playbook = memory_write(
        user=alice,
        text="Zigbee bulbs drop off: power-cycle the hub",
        memory_type="procedural",
        name="Zigbee drop-off",
        steps=["Power-cycle the hub"],
    )

    [episode] = say(alice, "my zigbee bulbs drop off the hub", session="kitchen")

    suggestion = PlaybookSuggestion.objects.get(user=alice)
    assert suggestion.episode_id == episode.id and suggestion.session_id == "kitchen"
    assert suggestion.procedure_ids == [playbook.id]


def test_without_a_model_nothing_is_counted_or_queued(alice, no_model):
    memory_write(user=alice, text="Zigbee: power-cycle", memory_type="procedural", name="Z")

    say(alice, *[f"zigbee message {n}" for n in range(12)])

    assert not ConsolidationRun.objects.exists()
    assert not ConsolidationState.objects.exists() and not PlaybookSuggestion.objects.exists()
    with pytest.raises(ConsolidationOff):
        consolidation_request(user=alice, trigger="on_demand")


def test_without_a_model_a_turn_opens_no_transaction_for_consolidation(alice, no_model):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from consolidation.receivers import on_episode_recorded

    [episode] = say(alice, "a turn")
    with CaptureQueriesContext(connection) as queries:
        on_episode_recorded(None, user=alice, episode=episode, procedure_ids=["p1"])

    assert len(queries) == 0


def test_a_second_request_returns_the_active_run(alice, chat):
    first = consolidation_request(user=alice, trigger="on_demand")
    second = consolidation_request(user=alice, trigger="daily")

    assert first.created and not second.created and second.run.pk == first.run.pk
    assert ConsolidationRun.objects.count() == 1


def test_a_run_whose_worker_died_frees_the_user_once_its_lease_expires(alice, chat):
    dead = consolidation_request(user=alice, trigger="on_demand").run
    assert lease_acquire(user=alice, run_id=dead.pk)
    ConsolidationRun.objects.filter(pk=dead.pk).update(status="running")

    # While the lease is live, the user stays busy: no second run, and no second holder.
    assert consolidation_request(user=alice, trigger="on_demand").run.pk == dead.pk
    assert not lease_acquire(user=alice, run_id=dead.pk + 1)

    ConsolidationState.objects.filter(user=alice).update(
        lease_until=timezone.now() - timedelta(seconds=1)
    )
    fresh = consolidation_request(user=alice, trigger="on_demand")

    dead.refresh_from_db()
    assert dead.status == "failed" and "abandoned" in dead.error
    assert fresh.created and fresh.run.pk != dead.pk


def test_a_run_that_cannot_take_the_lease_is_retried_not_run(alice, chat):
    say(alice, "hello")
    run = consolidation_request(user=alice, trigger="on_demand").run
    ConsolidationState.objects.filter(user=alice).update(
        lease_until=timezone.now() + timedelta(minutes=5)
    )

    with pytest.raises(UserBusy):
        consolidation_run(run_id=run.pk, final_attempt=False)

    run.refresh_from_db()
    assert run.status == "queued" and chat.requests == []
    assert ConsolidationState.objects.get(user=alice).lease_until is not None  # not ours


def test_a_finished_run_delivered_again_does_nothing(alice, chat):
    say(alice, "hello")
    run = consolidation_request(user=alice, trigger="on_demand").run
    consolidation_run(run_id=run.pk)

    again = consolidation_run(run_id=run.pk)

    assert again is not None and again.status == "done" and len(chat.requests) == 1


def test_the_daily_sweep_queues_users_with_new_episodes_in_daily_tenants(
    acme, globex, alice, bob, charlie, chat
):
    globex.consolidation_daily = False
    globex.save()
    say(alice, "hello")
    say(charlie, "hello")

    assert consolidation_daily_sweep() == 1

    assert [(r.user, r.trigger) for r in ConsolidationRun.objects.all()] == [(alice, "daily")]


def test_requests_and_runs_are_audited_once_each_without_text(alice, chat):
    [ep] = say(alice, "My secret hobby is competitive knitting")
    chat.script = [
        {"new_facts": [{"text": "Alice's hobby is competitive knitting", "confidence": 0.9,
                        "supporting_episode_ids": [ep.id]}]}
    ]  # fmt: skip
    before = set(AuditEvent.objects.values_list("pk", flat=True))

    run = consolidation_request(user=alice, trigger="on_demand").run
    consolidation_run(run_id=run.pk)

    new = AuditEvent.objects.exclude(pk__in=before).order_by("pk")
    assert [e.action for e in new] == ["consolidation.request", "memory.write", "consolidation.run"]
    closing = new.last()
    assert closing is not None and closing.metadata["facts_written"] == 1
    assert "knitting" not in str(list(new.values_list("metadata", flat=True)))


def test_a_disabled_user_is_not_consolidated(alice, chat):
    run = consolidation_request(user=alice, trigger="on_demand").run
    alice.status = "disabled"
    alice.save()

    with pytest.raises(Conflict):
        consolidation_request(user=alice, trigger="on_demand")
    finished = consolidation_run(run_id=run.pk)

    assert finished is not None and finished.status == "failed" and chat.requests == []
