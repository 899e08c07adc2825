"""Celery entry points of erasure: each takes ids (or nothing) and calls one service.

``erasure.run`` is queued on ``ATLAS_ERASURE_QUEUE`` after an approval or retry commits. With
``acks_late`` a worker killed mid-job leaves its message unacknowledged until the broker's
visibility timeout; ``erasure.resume_stalled`` (Celery beat, every 5 minutes, or
``manage.py erasure_resume``) re-queues a request whose lease expired long before that.
"""

from __future__ import annotations

from celery import shared_task

from atlas_platform.context import Actor, acting_as
from erasure.services import forget_request_execute, forget_request_resume_stalled

ERASURE_WORKER = Actor(type="system", id="erasure", label="erasure worker")


@shared_task(name="erasure.run", acks_late=True, ignore_result=True)  # type: ignore[untyped-decorator]
def forget_request_run(request_id: int) -> None:
    with acting_as(ERASURE_WORKER):
        forget_request_execute(request_id=request_id)


@shared_task(name="erasure.resume_stalled", ignore_result=True)  # type: ignore[untyped-decorator]
def erasure_resume_stalled() -> None:
    with acting_as(ERASURE_WORKER):
        forget_request_resume_stalled()
