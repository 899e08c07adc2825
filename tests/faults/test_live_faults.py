"""Faults on a live server, against dedicated processes it depends on (tests/faults/conftest.py:
our own PostgreSQL, Redis and Elasticsearch node, never the shared ones): each is killed or
frozen (SIGSTOP) under a request, and the answer must come within its budget, in JSON, and a
same-key retry must leave exactly one document with exactly one audit row."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from tests.celery_worker import celery_worker
from tests.faults.conftest import Stack
from tests.faults.processes import wait_for

MEMORIES = "/api/v1/users/u1/memories"
READ = "/api/v1/token"  # a read that needs the database (and the rate limiter)


def fact(marker: str) -> dict[str, str]:
    return {"text": f"The fault marker is {marker}", "memory_type": "semantic"}


def timed(stack: Stack, method: str, path: str, body=None, **kw):
    started = time.monotonic()
    response = stack.call(method, path, body, **kw)
    return response, time.monotonic() - started


def test_the_cluster_applies_a_write_after_the_client_gave_up(live: Stack) -> None:
    marker = uuid.uuid4().hex[:12]
    key = f"frozen-{marker}"
    live.es.freeze()
    try:
        first, took = timed(live, "POST", MEMORIES, fact(marker), key=key)
    finally:
        live.es.thaw()
    assert first.status_code == 503 and took < 8, (first.status_code, took)
    assert first.headers["content-type"].startswith("application/json")
    assert "Retry-After" in first.headers
    # The node takes the write it had queued once it runs again.
    wait_for(lambda: live.es.count(live.index_pattern, marker) == 1, timeout=30, what="the write")

    retry = live.call("POST", MEMORIES, fact(marker), key=key)
    again = live.call("POST", MEMORIES, fact(marker), key=key)

    assert retry.status_code == 201, retry.text
    assert again.json() == retry.json() and again.headers["Idempotent-Replayed"] == "true"
    assert live.es.count(live.index_pattern, marker) == 1
    assert live.audits(retry.json()["id"]) == 1


def test_a_server_killed_between_claim_and_completion(live: Stack) -> None:
    marker = uuid.uuid4().hex[:12]
    key = f"killed-{marker}"
    live.es.freeze()  # the write hangs on the cluster, after its claim and its intent
    cut: list[BaseException] = []

    def write() -> None:
        try:
            live.call("POST", MEMORIES, fact(marker), key=key)
        except Exception as exc:  # the server dies under it: the connection is cut
            cut.append(exc)

    thread = threading.Thread(target=write)
    thread.start()
    time.sleep(1.0)
    live.server.kill()
    live.es.thaw()
    thread.join(timeout=10)
    assert cut, "the request should have died with its server"
    live.server.start()

    early = live.call("POST", MEMORIES, fact(marker), key=key)
    if early.status_code == 409:  # within the dead process's lease: says how long to wait
        assert early.json()["error"]["code"] == "idempotency_in_progress"
        time.sleep(int(early.headers["Retry-After"]))
        early = live.call("POST", MEMORIES, fact(marker), key=key)

    assert early.status_code == 201, early.text
    assert live.es.count(live.index_pattern, marker) == 1
    assert live.audits(early.json()["id"]) == 1


@pytest.mark.parametrize("fault", ["killed", "frozen"])
def test_redis_down_requests_answer_within_budget_and_queued_runs_go_later(
    live: Stack, fault: str
) -> None:
    """The cache (rate limits) and the broker (consolidation) are the same dead Redis."""
    if fault == "killed":
        live.redis.kill()
    else:
        live.redis.freeze()
    try:
        marker = uuid.uuid4().hex[:12]
        written, took_write = timed(live, "POST", MEMORIES, fact(marker), key=f"redis-{marker}")
        listed, took_read = timed(live, "GET", READ)
        queued, took_queue = timed(live, "POST", "/api/v1/users/u1/consolidate")
        ready, took_ready = timed(live, "GET", "/readyz")
        metrics = live.call("GET", "/metrics").text
    finally:
        live.redis.thaw()
        live.redis.ensure_up()

    assert written.status_code == 201 and took_write < 4, (written.text, took_write)
    assert listed.status_code == 200 and took_read < 4, took_read
    assert queued.status_code == 202 and took_queue < 5, (queued.text, took_queue)
    assert queued.json()["status"] == "pending"  # accepted, not sent: the broker is away
    assert ready.status_code == 503 and took_ready < 3
    assert {"redis_cache", "redis_broker"} <= set(ready.json()["down"])
    assert "atlas_rate_limit_degraded_total" in metrics
    assert "atlas_jobs_outbox 1" in metrics

    # The broker is back: a worker starting sends what waited in the outbox, and runs it.
    run_id = queued.json()["run_id"]
    with celery_worker(queue="faults", env=live.env, log=live.workdir / f"worker-{fault}.log"):
        wait_for(lambda: run_status(live, run_id) in ("done", "failed"), timeout=60, what="run")
    assert live.pg.query("SELECT count(*) FROM atlas_platform_outboxjob")[0][0] == 0


def run_status(stack: Stack, run_id: int) -> str:
    rows = stack.pg.query("SELECT status FROM consolidation_consolidationrun WHERE id = %s", run_id)
    return str(rows[0][0])


def test_postgres_down_is_a_json_503_within_budget(live: Stack) -> None:
    live.pg.kill()
    try:
        answer, took = timed(live, "GET", READ)
        ready = live.call("GET", "/readyz")
        alive = live.call("GET", "/healthz")
    finally:
        live.pg.start()

    assert answer.status_code == 503 and took < 6, (answer.status_code, took)
    assert answer.headers["content-type"].startswith("application/json")
    assert answer.json()["error"]["code"] == "database_unavailable"
    assert "Retry-After" in answer.headers
    assert ready.status_code == 503 and "postgres" in ready.json()["down"]
    assert alive.status_code == 200  # liveness does not depend on the database
    wait_for(lambda: live.call("GET", READ).status_code == 200, timeout=30, what="recovery")


def test_readiness_names_a_frozen_cluster(live: Stack) -> None:
    ok = live.call("GET", "/readyz")
    assert ok.status_code == 200 and ok.json()["down"] == [], ok.text
    live.es.freeze()
    try:
        down, took = timed(live, "GET", "/readyz")
        alive, took_alive = timed(live, "GET", "/healthz")
    finally:
        live.es.thaw()

    assert down.status_code == 503 and down.json()["down"] == ["elasticsearch"], down.text
    assert took < 3 and alive.status_code == 200 and took_alive < 1


def test_metrics_are_prometheus_text(live: Stack) -> None:
    live.call("GET", MEMORIES)
    text = live.call("GET", "/metrics").text

    assert (
        'atlas_http_requests_total{method="GET",route="/api/v1/users/<str:user_id>/memories"'
        in text
    )
    assert "atlas_http_request_duration_seconds_bucket" in text
    assert "atlas_write_intents_pending" in text and "atlas_jobs_outbox" in text
