"""The fault-injection suite's fixtures: a time bound on every test, and (session-wide, shared
by the live tests) a dedicated stack: PostgreSQL, Redis and an Elasticsearch node of their own,
and an Atlas server on them. The suite kills and freezes only these."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import httpx2 as httpx
import pytest
from django.conf import settings

from tests.conftest import service_missing
from tests.consolidation.fake_llm import FakeChatServer
from tests.faults.processes import (
    ROOT,
    AtlasServer,
    Elasticsearch,
    Postgres,
    Redis,
    manage,
    wait_for,
)

TEST_BOUND_S = 150


@pytest.fixture(autouse=True)
def _bounded() -> Iterator[None]:
    """Fail a test that runs past ``TEST_BOUND_S`` (a hang is a failure, never a stuck run)."""

    def expire(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError(f"the test ran past its {TEST_BOUND_S} s bound")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(TEST_BOUND_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# --- the dedicated stack (session-wide: the Elasticsearch node costs ~20-30 s to start) ------
SEED = """
from tenants.models import Tenant, User
from tenants.services.tokens import token_issue
tenant = Tenant.objects.create(slug="faults", name="Faults", isolation_mode="filter")
user = User.objects.create(tenant=tenant, external_id="u1")
print("TOKEN", token_issue(tenant=tenant, user=user, name="faults").secret)
"""


WARM_UP = {"text": "The stack is warm.", "memory_type": "semantic"}


@dataclass
class Stack:
    pg: Postgres
    redis: Redis
    es: Elasticsearch
    server: AtlasServer
    env: dict[str, str]
    token: str
    workdir: Path
    index_pattern: str = "faults-*"

    def ensure_up(self) -> None:
        """Every dependency running and answering (a test that froze or killed one may have
        failed before it put it back)."""
        self.es.thaw()
        self.redis.ensure_up()
        self.pg.ensure_up()
        self.server.ensure_up()

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        key: str | None = None,
        timeout: float = 30,
    ) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.token}"}
        if key:
            headers["Idempotency-Key"] = key
        return httpx.request(
            method, f"{self.server.url}{path}", json=body, headers=headers, timeout=timeout
        )

    def audits(self, memory_id: str) -> int:
        rows = self.pg.query(
            "SELECT count(*) FROM tenants_auditevent WHERE metadata->>'memory_id' = %s", memory_id
        )
        return int(rows[0][0])


@pytest.fixture(scope="session")
def stack() -> Iterator[Stack]:
    es_home_check = Elasticsearch(Path("/nonexistent"))
    if not es_home_check.available():
        service_missing(f"the Elasticsearch distribution under {es_home_check.home}")
    workdir = Path(tempfile.mkdtemp(prefix="atlas-faults-", dir=tempfile.gettempdir()))
    workdir.chmod(0o755)  # the services' user walks into it
    (workdir / "es").mkdir()
    (workdir / "pg").mkdir()
    es, pg, redis = Elasticsearch(workdir / "es"), Postgres(workdir / "pg"), Redis(workdir)
    chat = FakeChatServer()  # the consolidation model: the one fake, at the HTTP boundary
    server: AtlasServer | None = None
    try:
        es.start()  # daemonises; comes up while PostgreSQL and Redis are prepared
        pg.init()
        pg.start()
        redis.start()
        env = stack_env(workdir, pg=pg, redis=redis, es=es, chat=chat)
        server = AtlasServer(env, workdir / "server.log")
        manage(env, "migrate", "--noinput")
        token = manage(env, "shell", "-c", SEED).split("TOKEN", 1)[1].strip()
        es.wait()
        server.start()
        ready = Stack(
            pg=pg, redis=redis, es=es, server=server, env=env, token=token, workdir=workdir
        )
        # The server's first write makes the memory index (slower than the short write budget
        # on a fresh node): retried with its key until it lands, before any fault.
        wait_for(
            lambda: (
                ready.call("POST", "/api/v1/users/u1/memories", WARM_UP, key="warm").status_code
                == 201
            ),
            timeout=90,
            what="the first write",
        )
        yield ready
    finally:
        if server is not None:
            server.kill()
        chat.close()
        es.stop()
        redis.kill()
        pg.kill()
        shutil.rmtree(workdir, ignore_errors=True)


def stack_env(
    workdir: Path, *, pg: Postgres, redis: Redis, es: Elasticsearch, chat: FakeChatServer
) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DATABASE_URL": pg.url,
        "ATLAS_ES_URL": es.url,
        "ATLAS_ES_USERNAME": "",
        "ATLAS_ES_PASSWORD": "",
        "ATLAS_ES_API_KEY": "",
        "ATLAS_ES_INDEX_PREFIX": "faults",
        "ATLAS_MEMORY_BACKEND": "elasticsearch",
        "ATLAS_CACHE_URL": redis.url(0),
        "CELERY_BROKER_URL": redis.url(1),
        "CELERY_TASK_ALWAYS_EAGER": "0",
        "CELERY_TASK_DEFAULT_QUEUE": "faults",
        "ATLAS_VAR_DIR": str(workdir / "var"),
        "ATLAS_MODELS_DIR": str(settings.ATLAS_EMBEDDING.models_dir),
        # Short budgets, so each fault costs the suite seconds.
        "ATLAS_ES_TIMEOUT_S": "2",
        "ATLAS_ES_READ_TIMEOUT_S": "1",
        "ATLAS_WRITE_LEASE_S": "3",
        "ATLAS_BROKER_TIMEOUT_S": "1",
        "ATLAS_CACHE_TIMEOUT_S": "0.3",
        "ATLAS_DB_POOL_TIMEOUT_S": "2",
        "ATLAS_DB_CONNECT_TIMEOUT_S": "2",
        "ATLAS_READY_TIMEOUT_S": "1",
        "ATLAS_HTTP_THREADS": "8",
        "ATLAS_CONSOLIDATION_BASE_URL": chat.url,
        "ATLAS_CONSOLIDATION_MODEL": "faults-consolidator",
        "ATLAS_CONSOLIDATION_API_KEY": "faults-key",
    }


@pytest.fixture
def live(stack: Stack) -> Iterator[Stack]:
    stack.ensure_up()
    yield stack
    stack.ensure_up()
