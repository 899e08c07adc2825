"""Health and metrics endpoints for load balancers and scrapers (deploy/README.md).

``/healthz``: liveness. The process answers; it checks nothing else, so a dependency that is
down never makes an orchestrator restart healthy processes.

``/readyz``: readiness. PostgreSQL, Elasticsearch (when configured) and Redis (the cache and
the job broker, when configured) are checked at once, each within ``ATLAS_READY_TIMEOUT_S``;
200 when all answer, else 503 naming what is down. A load balancer takes a process out of
rotation on a 503 and back on a 200.

``/metrics``: Prometheus text format (``atlas_platform.metrics``), plus gauges read at scrape
time: jobs waiting in the outbox, the broker queue's length, unsettled write intents.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from functools import cache
from typing import Any

from django.conf import settings
from django.db import connections
from django.http import HttpRequest, HttpResponse, JsonResponse

from atlas_platform import metrics
from atlas_platform.cluster import Cluster, get_cluster
from atlas_platform.jobs import outbox_depth
from memory.public import pending_intents

_checks = ThreadPoolExecutor(max_workers=8, thread_name_prefix="readyz")


def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def _postgres() -> None:
    try:
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT 1")
    finally:
        connections.close_all()  # this check thread's connection goes back to the pool


@cache
def _cluster() -> Cluster | None:
    return get_cluster()


def _elasticsearch() -> None:
    cluster = _cluster()
    if cluster is None:
        raise LookupError("no cluster configured")
    timeout = settings.ATLAS_READY_TIMEOUT_S
    client = cluster.client.options(request_timeout=timeout)
    client.cluster.health(timeout=f"{max(1, int(timeout * 1000))}ms")


def _redis(url: str) -> Callable[[], None]:
    def check() -> None:
        import redis

        timeout = settings.ATLAS_READY_TIMEOUT_S
        client = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
        try:
            client.ping()
        finally:
            client.close()

    return check


def _dependencies() -> dict[str, Callable[[], None]]:
    checks: dict[str, Callable[[], None]] = {"postgres": _postgres}
    if settings.ATLAS_MEMORY_BACKEND == "elasticsearch" and settings.ATLAS_ES_URL:
        checks["elasticsearch"] = _elasticsearch
    cache_url = settings.CACHES["default"].get("LOCATION", "")
    if "redis" in str(settings.CACHES["default"]["BACKEND"]).lower() and cache_url:
        checks["redis_cache"] = _redis(str(cache_url))
    broker = settings.CELERY_BROKER_URL
    if not settings.CELERY_TASK_ALWAYS_EAGER and broker.startswith(("redis://", "rediss://")):
        checks["redis_broker"] = _redis(broker)
    return checks


def readyz(request: HttpRequest) -> JsonResponse:
    started = time.monotonic()
    futures = {name: _checks.submit(check) for name, check in _dependencies().items()}
    wait(futures.values(), timeout=settings.ATLAS_READY_TIMEOUT_S)
    report: dict[str, Any] = {}
    down = []
    for name, future in futures.items():
        if not future.done():
            report[name] = {"ok": False, "error": "timeout"}
        elif future.exception() is not None:
            report[name] = {"ok": False, "error": type(future.exception()).__name__}
        else:
            report[name] = {"ok": True}
        if not report[name]["ok"]:
            down.append(name)
            metrics.dependency_error(name)
    body = {
        "status": "unavailable" if down else "ready",
        "down": down,
        "checks": report,
        "ms": round((time.monotonic() - started) * 1000, 1),
    }
    response = JsonResponse(body, status=503 if down else 200)
    if down:
        response["Retry-After"] = str(int(max(1, settings.ATLAS_RETRY_AFTER_S)))
    return response


def _gauge(name: str, help_text: str, read: Callable[[], int]) -> str:
    try:
        value = read()
    except Exception:  # a scrape during an outage still answers; the gauge is left out
        return ""
    return f"# HELP {name} {help_text}\n# TYPE {name} gauge\n{name} {value}\n"


def _broker_queue_depth() -> int:
    import redis

    broker = settings.CELERY_BROKER_URL
    if settings.CELERY_TASK_ALWAYS_EAGER or not broker.startswith(("redis://", "rediss://")):
        raise LookupError("no Redis broker")
    timeout = settings.ATLAS_READY_TIMEOUT_S
    client = redis.Redis.from_url(broker, socket_timeout=timeout, socket_connect_timeout=timeout)
    try:
        return int(client.llen(settings.CELERY_TASK_DEFAULT_QUEUE))
    finally:
        client.close()


def metrics_view(request: HttpRequest) -> HttpResponse:
    token = settings.ATLAS_METRICS_TOKEN
    if token:
        sent = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if not hmac.compare_digest(sent.encode(), token.encode()):
            return HttpResponse("metrics need the bearer token\n", status=401)
    extra = "".join(
        (
            _gauge("atlas_jobs_outbox", "Jobs waiting in the outbox for the broker.", outbox_depth),
            _gauge(
                "atlas_broker_queue_depth",
                "Messages in the default Celery queue, not yet taken by a worker.",
                _broker_queue_depth,
            ),
            _gauge(
                "atlas_write_intents_pending",
                "Store writes not settled yet (their audit row not written).",
                pending_intents,
            ),
        )
    )
    return HttpResponse(metrics.exposition(extra), content_type=metrics.CONTENT_TYPE)
