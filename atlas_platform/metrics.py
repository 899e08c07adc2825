"""Prometheus metrics (``prometheus_client``): what ``/metrics`` serves in the text format.

Counters and histograms live in the process. Under several server processes (gunicorn
workers), set ``PROMETHEUS_MULTIPROC_DIR`` to an empty directory shared by them: the client
then keeps its values in files there and ``/metrics`` sums every process (deploy/README.md).
Gauges that are a count in the database (outbox depth, pending write intents) are read at
scrape time by the endpoint, never kept here.
"""

from __future__ import annotations

import os

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client import multiprocess as _multiprocess

REQUESTS = Counter(
    "atlas_http_requests_total",
    "HTTP requests answered, by route pattern, method and status.",
    ["route", "method", "status"],
)
LATENCY = Histogram(
    "atlas_http_request_duration_seconds",
    "Time to answer an HTTP request, by route pattern, method and status.",
    ["route", "method", "status"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)
DEPENDENCY_ERRORS = Counter(
    "atlas_dependency_errors_total",
    "Calls to a dependency that failed, timed out or were refused for lack of a free slot.",
    ["dependency"],
)
SHED = Counter(
    "atlas_requests_shed_total",
    "Requests answered 503 at once because every slot for their dependency was taken.",
    ["dependency"],
)
DEGRADED = Counter(
    "atlas_rate_limit_degraded_total",
    "Rate-limit checks that used the per-process counters: the shared cache was unreachable.",
)

CONTENT_TYPE = CONTENT_TYPE_LATEST


def dependency_error(name: str) -> None:
    DEPENDENCY_ERRORS.labels(dependency=name).inc()


def exposition(extra: str = "") -> bytes:
    """This process's metrics (or every process's under ``PROMETHEUS_MULTIPROC_DIR``) in the
    text format, with ``extra`` lines appended (scrape-time gauges)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        _multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        text = generate_latest(registry)
    else:
        text = generate_latest()
    return text + extra.encode()
