"""Celery entry points of the data lifecycle."""

from __future__ import annotations

from celery import shared_task

from atlas_platform.context import Actor, acting_as
from lifecycle.services.retention import retention_enforce

RETENTION = Actor(type="system", id="retention", label="retention")


@shared_task(name="lifecycle.retention_enforce", ignore_result=True)  # type: ignore[untyped-decorator]
def retention_enforce_task() -> None:
    with acting_as(RETENTION):
        retention_enforce()
