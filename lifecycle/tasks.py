"""Celery entry points of the data lifecycle."""

from __future__ import annotations

from celery import shared_task

from atlas_platform.context import Actor, acting_as
from lifecycle.services.archive import archive_superseded
from lifecycle.services.retention import retention_enforce

RETENTION = Actor(type="system", id="retention", label="retention")
ARCHIVE = Actor(type="system", id="archive", label="archive")


@shared_task(name="lifecycle.retention_enforce", ignore_result=True)  # type: ignore[untyped-decorator]
def retention_enforce_task() -> None:
    with acting_as(RETENTION):
        retention_enforce()


@shared_task(name="lifecycle.archive_superseded", ignore_result=True)  # type: ignore[untyped-decorator]
def archive_superseded_task() -> None:
    with acting_as(ARCHIVE):
        archive_superseded()
