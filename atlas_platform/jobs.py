"""Queueing background jobs: the one helper every service uses to start a Celery task.

Services queue a task by its name, so they never import the task module (tasks import
services, not the other way round), and only once their transaction has committed, so a worker
never looks for a row that is not there yet::

    job_enqueue("erasure.run", request.pk, queue=settings.ATLAS_ERASURE_QUEUE)

With a broker the task is sent to ``queue`` (default ``CELERY_TASK_DEFAULT_QUEUE``). A broker
that is down is logged, not raised: the decision is committed already, and every job has a
sweeper that queues it again (erasure's ``resume_stalled``, consolidation's expiry of abandoned
runs). Without a broker (eager mode: ``make run``, most tests) the task runs on a background
thread of this process, so no request or turn waits for it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from functools import partial
from typing import Any

from django.conf import settings
from django.db import connections, transaction
from kombu.exceptions import OperationalError

from atlas_platform.celery import app

logger = logging.getLogger(__name__)


def job_enqueue(name: str, *args: Any, queue: str | None = None) -> None:
    """Queue the task called ``name`` with ``args`` once the current transaction commits (at
    once outside a transaction)."""
    transaction.on_commit(partial(_send, name, args, queue))


def _send(name: str, args: Sequence[Any], queue: str | None) -> None:
    if app.conf.task_always_eager:
        threading.Thread(target=_run_here, args=(name, args), name=name, daemon=True).start()
        return
    try:
        app.send_task(name, args=list(args), queue=queue or settings.CELERY_TASK_DEFAULT_QUEUE)
    except OperationalError:
        logger.warning(
            "job not queued (broker unavailable); its sweeper will queue it again",
            extra={"task": name, "job_args": list(args)},
        )


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
