"""A real Celery worker for tests: a subprocess consuming one private queue from the real
broker (Redis), pointed at the test database and whatever else the test sets in ``env``.

    with celery_worker(queue=q, env={...}, log=tmp_path / "worker.log"):
        ...  # tasks sent to ``q`` run in that process

Use ``worker_env()`` for the base environment (the test database, the broker, the queue) and
``broker_url()`` to get the broker (a missing Redis fails under ATLAS_REQUIRE_SERVICES=1).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings
from django.db import connection

from tests.conftest import service_missing

ROOT = Path(__file__).resolve().parent.parent


def unique_queue(area: str) -> str:
    return f"atlas-test-{area}-{secrets.token_hex(4)}"


def broker_url() -> str:
    """The broker from the settings / environment; it must be a reachable Redis."""
    url = str(settings.CELERY_BROKER_URL)
    if not url.startswith("redis://"):
        service_missing("Redis (CELERY_BROKER_URL=redis://...)")
    import redis

    try:
        redis.Redis.from_url(url, socket_timeout=3).ping()
    except Exception as exc:  # any failure to reach it means "not available"
        service_missing(f"Redis at {url} ({exc!r})")
    return url


def worker_database_url() -> str:
    """The database pytest-django created for this session (the worker must use it)."""
    db = connection.settings_dict
    if db["ENGINE"] != "django.db.backends.postgresql":
        service_missing("PostgreSQL (DATABASE_URL=postgres://...) for the worker tests")
    return f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


def worker_env(*, queue: str, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "DATABASE_URL": worker_database_url(),
        "CELERY_BROKER_URL": broker_url(),
        "CELERY_TASK_ALWAYS_EAGER": "0",
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        "ATLAS_VAR_DIR": str(settings.VAR_DIR),
        "PYTHONPATH": str(ROOT),
    }
    env.update(extra)
    return env


@contextlib.contextmanager
def celery_worker(
    *, queue: str, env: dict[str, str], log: Path
) -> Iterator[subprocess.Popen[bytes]]:
    """Start ``celery worker -Q queue --pool=solo``; wait until it is ready; stop it after."""
    command = [
        sys.executable, "-m", "celery", "-A", "atlas_platform", "worker",
        "-Q", queue, "--pool=solo", "-n", f"{queue}@%h",
        "--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "INFO",
    ]  # fmt: skip
    with log.open("wb") as out:
        # Our own interpreter and fixed arguments: no untrusted input reaches the command.
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=out)  # noqa: S603
    try:
        deadline = time.monotonic() + 90
        while b"ready." not in log.read_bytes():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the worker did not start:\n{log.read_text()[-4000:]}")
            time.sleep(0.2)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        _forget_queue(env["CELERY_BROKER_URL"], queue)


def _forget_queue(url: str, queue: str) -> None:
    """Drop the private queue and kombu's binding for it, so test runs leave no keys behind."""
    import redis

    with contextlib.suppress(Exception):  # best-effort cleanup of a throwaway queue
        client = redis.Redis.from_url(url, socket_timeout=3)
        client.delete(queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")
