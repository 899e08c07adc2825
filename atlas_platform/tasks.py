"""The platform's Celery tasks: the job outbox's flush (beat every 30 s, and at worker start) and
the exactly-once ledger's purge (beat, hourly)."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from celery.signals import worker_ready

from atlas_platform.jobs import jobs_flush
from atlas_platform.ledger import ledger_purge


@shared_task(name="atlas_platform.jobs_flush")  # type: ignore[untyped-decorator]
def jobs_flush_task() -> int:
    """Send the jobs whose publish failed while the broker was away."""
    return jobs_flush()


@worker_ready.connect  # type: ignore[untyped-decorator]
def _flush_at_start(**_: Any) -> None:
    """A worker that starts (often: the broker just came back) sends what waited, at once."""
    jobs_flush(min_age_s=0.0)


@shared_task(name="atlas_platform.ledger_purge")  # type: ignore[untyped-decorator]
def ledger_purge_task() -> int:
    """Drop exactly-once ledger entries past their lifetime (they may hold memory text)."""
    return ledger_purge()
