"""Erasure fixtures: the embedded store for service tests, and a REAL Celery worker process
consuming from REAL Redis for the job tests.

``erasure_worker`` starts ``celery -A atlas_platform worker --pool=solo`` as a subprocess on a
queue unique to this test session, pointed at pytest-django's test database (live-DB tests
only: the worker must see committed rows), at this session's Elasticsearch index prefix and at
the broker from the settings / environment. Tests can kill it (SIGKILL) and start it again.
"""

from __future__ import annotations

import contextlib
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.atlas_server.conftest import api, store  # noqa: F401 - the embedded store, the JSON caller
from tests.celery_worker import broker_url, worker_env
from tests.memory.conftest import engine, people  # noqa: F401 - every backend, named people

ROOT = Path(__file__).resolve().parents[2]
READY_TIMEOUT_S = 60.0


@pytest.fixture(scope="session")
def erasure_queue() -> str:
    return f"atlas-erasure-test-{secrets.token_hex(4)}"


class Worker:
    """One ``celery worker`` subprocess; ``start`` waits until it consumes."""

    def __init__(self, env: dict[str, str], queue: str, log: Path) -> None:
        self.env, self.queue, self.log = env, queue, log
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self) -> None:
        self.starts += 1
        marker = self.log.with_suffix(f".{self.starts}.log")
        command = [
            sys.executable, "-m", "celery", "-A", "atlas_platform", "worker",
            "-Q", self.queue, "--pool=solo", "--concurrency=1", "--loglevel=INFO",
            "--without-gossip", "--without-mingle", "--without-heartbeat",
            "-n", f"{self.queue}-{self.starts}@%h",
        ]  # fmt: skip
        with marker.open("wb") as out:
            self.process = subprocess.Popen(  # noqa: S603 - fixed argv
                command, cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if " ready." in marker.read_text(errors="replace"):
                self.current_log = marker
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.2)
        raise AssertionError(f"the worker did not start:\n{marker.read_text(errors='replace')}")

    def kill(self) -> None:
        """SIGKILL: no warm shutdown, the message stays unacknowledged."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=30)
        self.process = None

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()
        self.process = None

    def output(self) -> str:
        return "".join(
            p.read_text(errors="replace") for p in sorted(self.log.parent.glob("worker.*.log"))
        )


@pytest.fixture
def erasure_worker(
    transactional_db: None, es: Any, settings: Any, erasure_queue: str, tmp_path: Path
) -> Iterator[Worker]:
    """A real worker on this session's queue; the test process publishes to the same broker.
    Settings the worker reads come through its environment (page size 25, lease 5 s)."""
    with _worker(settings, erasure_queue, tmp_path, "elasticsearch") as worker:
        yield worker


@pytest.fixture(params=["embedded", "elasticsearch"])
def backend_worker(
    request: Any, transactional_db: None, settings: Any, erasure_queue: str, tmp_path: Path
) -> Iterator[Worker]:
    """``erasure_worker`` on each backend: the embedded store is a file both processes open."""
    if request.param == "elasticsearch":
        request.getfixturevalue("es")
    with _worker(settings, erasure_queue, tmp_path, request.param) as worker:
        yield worker


@contextlib.contextmanager
def _worker(settings: Any, queue: str, tmp_path: Path, kind: str) -> Iterator[Worker]:
    from atlas_platform.celery import app

    broker = broker_url()
    settings.ATLAS_MEMORY_BACKEND = kind
    settings.ATLAS_ERASURE_QUEUE = queue
    settings.ATLAS_ERASURE_PAGE_SIZE = 25
    settings.ATLAS_ERASURE_LEASE_S = 5
    if kind == "embedded":
        settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")
        store = {"ATLAS_EMBEDDED_PATH": settings.ATLAS_EMBEDDED_PATH}
    else:
        store = {
            "ATLAS_ES_URL": settings.ATLAS_ES_URL,
            "ATLAS_ES_USERNAME": settings.ATLAS_ES_USERNAME,
            "ATLAS_ES_PASSWORD": settings.ATLAS_ES_PASSWORD,
            "ATLAS_ES_INDEX_PREFIX": settings.ATLAS_ES_INDEX_PREFIX,
        }
    env = worker_env(
        queue=queue,
        ATLAS_MEMORY_BACKEND=kind,
        ATLAS_DEPLOYMENT_ID=settings.ATLAS_DEPLOYMENT_ID,
        ATLAS_ERASURE_QUEUE=queue,
        ATLAS_ERASURE_PAGE_SIZE="25",
        ATLAS_ERASURE_LEASE_S="5",
        ATLAS_RECEIPT_KEY=settings.ATLAS_RECEIPT_KEY,
        LOG_LEVEL="INFO",
        **store,
    )
    saved = {k: app.conf.get(k) for k in ("broker_url", "task_always_eager")}
    app.conf.update(broker_url=broker, task_always_eager=False)
    worker = Worker(env, queue, tmp_path / "worker.log")
    try:
        yield worker
    finally:
        worker.stop()
        with contextlib.suppress(Exception), app.connection_for_write() as conn:
            conn.default_channel.queue_purge(queue)
        app.conf.update(**saved)


@pytest.fixture
def api_client_post(client: Any) -> Any:
    """Write a fact through the REST API with an Idempotency-Key (the ledger keeps the
    response, text included); returns the text."""
    import json

    from tenants.services.tokens import token_issue

    def post(user: Any, text: str) -> str:
        token = token_issue(tenant=user.tenant, user=user, name=f"{user.external_id} bot")
        response = client.post(
            f"/api/v1/users/{user.external_id}/memories",
            data=json.dumps({"text": text, "memory_type": "semantic"}),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {token.secret}",
            HTTP_IDEMPOTENCY_KEY=secrets.token_hex(8),
        )
        assert response.status_code == 201, response.content
        return text

    return post
