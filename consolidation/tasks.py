"""Celery tasks: they take ids and call one service; retries with exponential backoff."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from consolidation.services.run import consolidation_run, is_transient
from consolidation.services.triggers import consolidation_daily_sweep


@shared_task(bind=True, acks_late=True, max_retries=None)  # type: ignore[untyped-decorator]
def consolidation_execute(self: object, run_id: int) -> str:
    """Run consolidation run ``run_id``; transient failures retry after 30 s, 60 s, 120 s..."""
    retries = int(self.request.retries)  # type: ignore[attr-defined]
    final = retries >= settings.ATLAS_CONSOLIDATION_TASK_RETRIES
    try:
        run = consolidation_run(run_id=run_id, final_attempt=final)
        return run.status if run is not None else "missing"
    except Exception as exc:
        if not is_transient(exc) or final:
            raise
        countdown = settings.ATLAS_CONSOLIDATION_RETRY_BACKOFF_S * (2**retries)
        raise self.retry(exc=exc, countdown=countdown) from exc  # type: ignore[attr-defined]


@shared_task  # type: ignore[untyped-decorator]
def consolidation_daily() -> int:
    """The beat schedule's daily sweep: queue a run for each user with new episodes."""
    return consolidation_daily_sweep()
