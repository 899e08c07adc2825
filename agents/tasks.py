"""Celery tasks of the agents app."""

from __future__ import annotations

from celery import shared_task

from agents.services.operations import operations_purge


@shared_task(name="agents.operations_purge")  # type: ignore[untyped-decorator]
def operations_purge_task() -> int:
    """Drop replay records past their retention (beat, hourly)."""
    return operations_purge()
