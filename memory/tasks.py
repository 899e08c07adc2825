"""Celery tasks of the memory app: housekeeping on the beat schedule."""

from __future__ import annotations

from celery import shared_task

from memory.services.idempotency import idempotency_purge
from memory.services.intents import intents_purge
from memory.services.writes import memory_intents_reconcile


@shared_task(name="memory.idempotency_purge")  # type: ignore[untyped-decorator]
def idempotency_purge_task() -> int:
    """Delete idempotency records past their 24 h lifetime (they hold response bodies)."""
    return idempotency_purge()


@shared_task(name="memory.intents_reconcile")  # type: ignore[untyped-decorator]
def intents_reconcile_task() -> int:
    """Take back store writes nobody settled (crashed, never retried); drop old settled ones."""
    taken = memory_intents_reconcile()
    intents_purge()
    return taken
