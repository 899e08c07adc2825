"""Gunicorn for Atlas in production: uvicorn workers serving the ASGI app (Django + MCP).

    gunicorn -c deploy/gunicorn.conf.py

Each worker is a separate process with its own event loop, database connections, embedder and
MCP session manager (started by the ASGI lifespan). The MCP transport is stateless, so any
worker can answer any request: no sticky sessions needed. See deploy/README.md.
"""

import os
from pathlib import Path
from typing import Any

wsgi_app = "atlas_server.asgi:application"
worker_class = "uvicorn_worker.UvicornWorker"  # the maintained successor of uvicorn.workers
bind = os.environ.get("ATLAS_BIND", "0.0.0.0:8000")

# Recall and writes are CPU work (embedding) on each worker's request threads, with
# ATLAS_EMBEDDER_THREADS (default 1) per embedding and many requests at once per worker: about
# one worker per two cores fills the box.
workers = int(os.environ.get("WEB_CONCURRENCY", max(2, (os.cpu_count() or 2) // 2)))

# Not preloaded: the ONNX runtime and the MCP session manager are built per worker, after fork.
preload_app = False
timeout = int(os.environ.get("ATLAS_WORKER_TIMEOUT", "60"))
graceful_timeout = 30
keepalive = 5
# Recycle workers now and then so slow leaks (in any dependency) cannot grow without bound.
max_requests = 2000
max_requests_jitter = 200

# Behind a TLS-terminating proxy, list its address so X-Forwarded-Proto/For are trusted (the
# admin then builds https:// URLs, including the MCP URL in the client config snippet).
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")

accesslog = "-"
errorlog = "-"
loglevel = os.environ.get("LOG_LEVEL", "info").lower()


# Prometheus metrics across workers (atlas_platform/metrics.py): with PROMETHEUS_MULTIPROC_DIR
# set, each worker keeps its values in files there and a scrape of any worker sums them all.
# The directory is emptied when the arbiter starts (values of an earlier run would be summed
# in); a worker that exits is marked dead, so gauges it kept leave the sum (its counters stay).
def on_starting(server: Any) -> None:
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if directory:
        Path(directory).mkdir(parents=True, exist_ok=True)
        for stale in Path(directory).glob("*.db"):
            stale.unlink()


def child_exit(server: Any, worker: Any) -> None:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)  # type: ignore[no-untyped-call]
