"""Celery tasks of the memory app: housekeeping on the beat schedule."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from memory.services.erasure import EXPUNGE_RETRY_S, memory_expunge_deleted
from memory.services.intents import intents_purge
from memory.services.writes import memory_intents_reconcile


@shared_task(name="memory.intents_reconcile")  # type: ignore[untyped-decorator]
def intents_reconcile_task() -> int:
    """Take back store writes nobody settled (crashed, never retried); drop old settled ones."""
    taken = memory_intents_reconcile()
    intents_purge()
    return taken


@shared_task(  # type: ignore[untyped-decorator]
    name="memory.expunge_deleted", bind=True, max_retries=15, default_retry_delay=EXPUNGE_RETRY_S
)
def expunge_deleted_task(self: Any, tenant_id: str, user_id: str) -> bool:
    """Merge an erasure's deleted documents out of the index's statistics; again later until
    the shard's retention lease lets them go."""
    if memory_expunge_deleted(tenant_id=tenant_id, user_id=user_id):
        return True
    raise self.retry()
