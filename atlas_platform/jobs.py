"""Queueing background jobs: the one helper every service uses to start a Celery task.

Services queue a task by its name, so they never import the task module (tasks import
services, not the other way round), and only once their transaction has committed, so a worker
never looks for a row that is not there yet::

    job_enqueue("erasure.run", request.pk, queue=settings.ATLAS_ERASURE_QUEUE)

With a broker, the job is first an ``OutboxJob`` row written in the caller's transaction (it
exists exactly when the decision committed); after the commit the message is published within
``ATLAS_BROKER_TIMEOUT_S`` (socket timeouts, no publish retries, and a hard bound on the
caller's wait: the publish runs on a small pool of its own threads) and the row is deleted. A
broker that is down, slow or frozen costs the caller at most that budget: the row stays, and
``jobs_flush`` (beat every 30 s, and at worker start) sends it once the broker is back. Tasks
are safe to receive twice (each checks its row's state), which a publish that timed out and
still arrived can cause. ``job_pending(ref)`` tells a caller whether its job is still waiting.

Without a broker (eager mode: ``make run``, most tests) the task runs on a background thread of
this process, so no request or turn waits for it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connections, transaction
from django.db.models import F
from django.utils import timezone

from atlas_platform import metrics
from atlas_platform.celery import app
from atlas_platform.models import OutboxJob

logger = logging.getLogger(__name__)
PUBLISH_THREADS = 4  # publishes in flight per process; past them, jobs wait in the outbox
FLUSH_BATCH = 200

_publisher = ThreadPoolExecutor(max_workers=PUBLISH_THREADS, thread_name_prefix="publish")
_in_flight = threading.BoundedSemaphore(PUBLISH_THREADS)


def job_enqueue(name: str, *args: Any, queue: str | None = None, ref: str = "") -> None:
    """Queue the task called ``name`` with ``args`` once the current transaction commits (at
    once outside a transaction). ``ref`` names what it is for (see ``job_pending``)."""
    if app.conf.task_always_eager:
        transaction.on_commit(partial(_run_eager, name, args))
        return
    job = OutboxJob.objects.create(
        name=name,
        args=list(args),
        queue=queue or settings.CELERY_TASK_DEFAULT_QUEUE,
        ref=ref,
    )
    transaction.on_commit(partial(_publish_and_forget, job))


def job_pending(ref: str) -> bool:
    """Whether a job queued for ``ref`` is still waiting for the broker (not sent yet)."""
    if not ref or app.conf.task_always_eager:
        return False
    return OutboxJob.objects.filter(ref=ref).exists()


def outbox_depth() -> int:
    """Jobs waiting for the broker (the metrics endpoint's gauge)."""
    return OutboxJob.objects.count()


def _publish_and_forget(job: OutboxJob) -> None:
    if _publish(job):
        try:
            OutboxJob.objects.filter(pk=job.pk).delete()
        except DatabaseError:  # sent twice later at worst: tasks check their row's state
            logger.warning("sent job left in the outbox", extra={"task": job.name})


def _publish(job: OutboxJob) -> bool:
    """Send one job's message within the budget; False (logged, counted) when it was not."""
    budget = settings.ATLAS_BROKER_TIMEOUT_S
    if not _in_flight.acquire(blocking=False):  # every publisher is stuck on the broker
        _not_sent(job, "publishers busy")
        return False
    try:
        future = _publisher.submit(_send, job)
    except RuntimeError:  # the pool is shutting down (interpreter exit)
        _in_flight.release()
        return False
    future.add_done_callback(lambda _: _in_flight.release())
    try:
        future.result(timeout=budget)
    except FutureTimeout:
        _not_sent(job, f"no answer within {budget} s")
        return False
    except Exception as exc:
        _not_sent(job, type(exc).__name__)
        return False
    return True


def _send(job: OutboxJob) -> None:
    app.send_task(job.name, args=list(job.args), queue=job.queue, retry=False)


def _not_sent(job: OutboxJob, why: str) -> None:
    metrics.dependency_error("broker")
    logger.warning(
        "job not sent (broker unavailable); it waits in the outbox",
        extra={"task": job.name, "job_args": list(job.args), "why": why},
    )


def jobs_flush(*, min_age_s: float | None = None) -> int:
    """Send the outbox's jobs (oldest first, a batch); returns how many the broker took. Jobs
    younger than ``min_age_s`` (default: twice the publish budget) are left to the publish
    that is still trying them."""
    age = 2 * settings.ATLAS_BROKER_TIMEOUT_S if min_age_s is None else min_age_s
    cutoff = timezone.now() - timedelta(seconds=age)
    sent = 0
    for job in OutboxJob.objects.filter(created_at__lte=cutoff)[:FLUSH_BATCH]:
        OutboxJob.objects.filter(pk=job.pk).update(attempts=F("attempts") + 1)
        if not _publish(job):
            break  # the broker is still away: the next flush tries again
        OutboxJob.objects.filter(pk=job.pk).delete()
        sent += 1
    if sent:
        logger.info("outbox flushed", extra={"sent": sent})
    return sent


def _run_eager(name: str, args: Sequence[Any]) -> None:
    threading.Thread(target=_run_here, args=(name, args), name=name, daemon=True).start()


def _run_here(name: str, args: Sequence[Any]) -> None:
    """Eager mode: run the task in this thread, with its own database connections."""
    try:
        if name not in app.tasks:
            app.loader.import_default_modules()  # the apps' tasks modules (autodiscovery)
        app.tasks[name].apply(args=list(args))
    except Exception:  # a job's failure is the job's (it records it); never the caller's
        logger.exception("eager job failed", extra={"task": name})
    finally:
        connections.close_all()  # this thread's own connections
