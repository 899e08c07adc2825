"""The real worker path: a Celery worker process consuming a private queue from the real Redis,
on the real Elasticsearch (isolation ``dls``: the worker reads with the user's scoped key) and
the test PostgreSQL database, runs consolidation end to end. Only the chat model is faked, at
its HTTP boundary."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.db import connection
from django.test import Client

from atlas_platform.celery import app
from consolidation.models import ConsolidationRun, ConsolidationState, PlaybookSuggestion
from consolidation.selectors import recent_runs, tenant_token_usage
from memory.engine.types import MemoryType
from memory.services import bookkeeping
from memory.services.common import backend
from memory.services.scoping import user_read_scope
from memory.services.writes import memory_write
from tenants.models import AuditEvent, Tenant, User
from tenants.services.scoped_keys import scoped_key_provision
from tests.atlas_server.conftest import user_token
from tests.celery_worker import celery_worker, unique_queue, worker_env
from tests.conftest import login
from tests.consolidation.conftest import say
from tests.consolidation.fake_llm import Delay, episode_id, prompt_of

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services]


@pytest.fixture(scope="module")
def queue() -> str:
    return unique_queue("consolidation")


@pytest.fixture(scope="module")
def worker(queue, chat_server, es_session_config, django_db_setup, django_db_blocker,
           tmp_path_factory):  # fmt: skip
    """One worker process for this module, on the session's test database and index prefix."""
    with django_db_blocker.unblock():
        env = worker_env(
            queue=queue,
            ATLAS_MEMORY_BACKEND="elasticsearch",
            ATLAS_ES_URL=es_session_config.url,
            ATLAS_ES_USERNAME=es_session_config.username,
            ATLAS_ES_PASSWORD=es_session_config.password,
            ATLAS_ES_API_KEY="",
            ATLAS_ES_INDEX_PREFIX=es_session_config.index_prefix,
            ATLAS_DEPLOYMENT_ID=f"test-{es_session_config.index_prefix}",
            ATLAS_CONSOLIDATION_BASE_URL=chat_server.url,
            ATLAS_CONSOLIDATION_MODEL="test-consolidator",
            ATLAS_CONSOLIDATION_API_KEY="test-key",
            ATLAS_CONSOLIDATION_TIMEOUT_S="10",
            ATLAS_CONSOLIDATION_HTTP_RETRIES="1",
            ATLAS_CONSOLIDATION_RETRY_BACKOFF_S="1",
        )
    log = tmp_path_factory.mktemp("celery") / "worker.log"
    with celery_worker(queue=queue, env=env, log=log):
        yield log


@pytest.fixture
def on_worker(worker, queue, es, chat, settings):
    """This process sends to the worker's queue on the real broker (never eagerly)."""
    settings.ATLAS_MEMORY_BACKEND = "elasticsearch"
    settings.CELERY_TASK_DEFAULT_QUEUE = queue
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = False
    yield worker
    app.conf.task_always_eager = eager
    bookkeeping.drain()


def wait_finished(run_id: int, log: Any, timeout: float = 120) -> ConsolidationRun:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = ConsolidationRun.objects.get(pk=run_id)
        if run.status in ("done", "failed"):
            return run
        time.sleep(0.25)
    raise AssertionError(f"run {run_id} did not finish; worker log:\n{log.read_text()[-4000:]}")


def docs(user: User, memory_type: MemoryType) -> dict[str, Any]:
    return {d.id: d for d in backend().scan(user_read_scope(user), memory_types=(memory_type,))}


def answer(facts=(), updates=()):
    return {"new_facts": list(facts), "new_procedures": [], "procedural_updates": list(updates)}


def suggested_playbook(request: dict[str, Any], episode_text: str, name_part: str) -> Any:
    """What a model does: read which playbooks the agent was given for that message."""
    prompt = prompt_of(request)
    episode = next(e for e in prompt["episodes"] if episode_text in e["text"])
    names = {p["id"]: p["name"] for p in prompt["playbooks"]}
    return next(i for i in episode["playbooks_suggested_in_reply"] if name_part in names[i])


@pytest.fixture
def acme_dls(db: None) -> Tenant:
    return Tenant.objects.create(
        slug="acme",
        name="Acme",
        isolation_mode=Tenant.IsolationMode.DLS,
        consolidation_every_n_episodes=3,
    )


@pytest.fixture
def alice_dls(acme_dls: Tenant) -> User:
    user = User.objects.create(tenant=acme_dls, external_id="alice")
    scoped_key_provision(user=user)
    return user


def test_a_real_worker_consolidates_after_n_episodes_and_closes_the_feedback_loop(
    on_worker, chat, alice_dls
):
    alice = alice_dls
    lyon = memory_write(user=alice, text="Alice lives in Lyon", memory_type="semantic")
    zigbee = memory_write(
        user=alice,
        text="Zigbee bulbs keep dropping off the hub: power-cycle the hub, then re-pair",
        memory_type="procedural",
        name="Zigbee bulbs dropping off the hub",
        trigger="zigbee bulbs disconnect from the hub",
        steps=["Power-cycle the hub", "Re-pair the bulbs"],
    )
    camera = memory_write(
        user=alice,
        text="Camera keeps losing wifi: move the router closer to the camera",
        memory_type="procedural",
        name="Camera losing wifi",
        trigger="camera wifi disconnects",
        steps=["Move the router closer"],
    )

    def model(request: dict[str, Any]) -> Any:
        current = {f["text"]: f["id"] for f in prompt_of(request)["current_facts"]}
        return answer(
            facts=[
                {"text": "Alice lives in Berlin", "fact_type": "identity", "confidence": 0.9,
                 "supporting_episode_ids": [episode_id(request, "moved from Lyon")],
                 "supersedes": [current["Alice lives in Lyon"]], "contradiction": "natural"}
            ],
            updates=[
                {"procedure_id": suggested_playbook(request, "zigbee bulbs", "Zigbee"),
                 "outcome": "success",
                 "supporting_episode_ids": [episode_id(request, "that fixed it")]}
            ],
        )  # fmt: skip

    chat.script = [model]
    first = say(
        alice,
        "My zigbee bulbs keep dropping off the hub again",
        "By the way, I moved from Lyon to Berlin",
        "thanks, that fixed it!",
    )

    # The third episode reached the tenant's N=3: the turn queued a run on commit.
    run = ConsolidationRun.objects.get(user=alice)
    assert run.trigger == "episodes"
    run = wait_finished(run.pk, on_worker)
    assert chat.errors == []
    assert run.status == "done", run.error
    assert run.episodes_in == 3 and run.facts_written == 1 and run.supersessions == 1
    assert run.procedures_updated == 1 and run.tokens_used > 0

    facts = docs(alice, "semantic")
    berlin = next(d for d in facts.values() if d.text == "Alice lives in Berlin")
    assert facts[lyon.id].superseded_by == berlin.id and berlin.source == "consolidation"
    playbooks = docs(alice, "procedural")
    assert playbooks[zigbee.id].success_count == 1 and playbooks[zigbee.id].failure_count == 0
    state = ConsolidationState.objects.get(user=alice)
    assert state.watermark_episode_id == first[-1].id and state.pending_episodes == 0
    assert state.lease_until is None

    # "that didn't help" after the camera playbook was suggested: a failure, refined steps.
    def model_2(request: dict[str, Any]) -> Any:
        return answer(
            updates=[
                {"procedure_id": suggested_playbook(request, "camera keeps losing", "Camera"),
                 "outcome": "failure",
                 "refined_steps": ["Create a 2.4 GHz-only network", "Rejoin the camera"],
                 "supporting_episode_ids": [episode_id(request, "didn't help")]}
            ]
        )  # fmt: skip

    chat.script = [model_2]
    say(
        alice,
        "My camera keeps losing wifi every evening",
        "moving the router closer didn't help",
        "a 2.4 GHz-only network finally fixed the camera",
        session="s2",
    )
    second = ConsolidationRun.objects.exclude(pk=run.pk).get(user=alice)
    second = wait_finished(second.pk, on_worker)
    assert chat.errors == []
    assert second.status == "done", second.error
    assert second.procedures_updated == 1 and second.episodes_in == 3  # after the watermark
    refined = docs(alice, "procedural")[camera.id]
    assert refined.failure_count == 1 and refined.version == 2
    assert [s["instruction"] for s in refined.steps] == [
        "Create a 2.4 GHz-only network",
        "Rejoin the camera",
    ]
    assert docs(alice, "procedural")[zigbee.id].success_count == 1  # untouched this time

    usage = tenant_token_usage(alice.tenant)
    assert usage.runs == 2 and usage.total_tokens == run.tokens_used + second.tokens_used
    assert [r.pk for r in recent_runs(alice.tenant)] == [second.pk, run.pk]
    sources = AuditEvent.objects.filter(
        subject_user=alice, action__in=["memory.supersede", "procedure.outcome"]
    ).values_list("metadata__source", "actor_label")
    assert set(sources) == {("consolidation", "consolidation")}
    assert not PlaybookSuggestion.objects.filter(user=alice, episode_id=first[0].id).exists()


def test_two_triggers_at_once_yield_one_run_and_a_rerun_writes_nothing(
    on_worker, chat, acme, alice, acme_admin
):
    say(alice, "I am learning Portuguese")
    chat.script = [Delay(2, answer())]  # keeps the run busy while the triggers race
    token = user_token(alice)
    admin = login(acme_admin)
    barrier = threading.Barrier(2)
    responses: dict[str, Any] = {}

    def by_api() -> None:
        barrier.wait()
        try:
            responses["api"] = Client().post(
                f"/api/v1/users/{alice.external_id}/consolidate",
                HTTP_AUTHORIZATION=f"Bearer {token}",
            )
        finally:
            connection.close()  # this thread's own connection

    def by_admin() -> None:
        barrier.wait()
        try:
            responses["admin"] = admin.post(
                "/admin/tenants/user/", {"action": "consolidate", "_selected_action": [alice.pk]}
            )
        finally:
            connection.close()

    threads = [threading.Thread(target=by_api), threading.Thread(target=by_admin)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert responses["api"].status_code == 202 and responses["admin"].status_code == 302
    assert ConsolidationRun.objects.filter(user=alice).count() == 1
    run = ConsolidationRun.objects.get(user=alice)
    assert responses["api"].json()["run_id"] == run.pk
    run = wait_finished(run.pk, on_worker)
    assert run.status == "done" and run.episodes_in == 1 and len(chat.requests) == 1

    rerun = Client().post(
        f"/api/v1/users/{alice.external_id}/consolidate", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert rerun.status_code == 202 and rerun.json()["created"] is True
    again = wait_finished(rerun.json()["run_id"], on_worker)
    assert again.status == "done" and again.episodes_in == 0 and again.facts_written == 0
    assert len(chat.requests) == 1  # nothing new: the model was not asked again
