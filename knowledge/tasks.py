"""Celery tasks of the knowledge app (beat, `make beat`)."""

from __future__ import annotations

from celery import shared_task

from knowledge.services.entities import entities_reindex, tombstones_purge


@shared_task(name="knowledge.reindex")  # type: ignore[untyped-decorator]
def reindex_task() -> int:
    """Index entities written while the memory store was down (every 5 minutes)."""
    return entities_reindex()


@shared_task(name="knowledge.tombstones_purge")  # type: ignore[untyped-decorator]
def tombstones_purge_task() -> int:
    """Drop tombstones past their restore window (hourly)."""
    return tombstones_purge()
