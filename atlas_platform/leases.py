"""Database leases with an expiry: the one way a job holds a row against a second worker.

A lease is two fields on a model: who holds it and until when. Taking it is one conditional
``UPDATE`` (free, or expired), so it works on every database and needs no lock held across the
work; a worker that dies frees the row once its lease runs out. The holder renews it as it
goes (``deadline()`` again) and releases it when done::

    RUN_LEASE = Lease(holder="lease_run_id", until="lease_until", seconds="ATLAS_..._LEASE_S")
    if RUN_LEASE.take(State.objects.filter(user=user), holder=run.pk): ...
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Model, Q, QuerySet
from django.utils import timezone


@dataclass(frozen=True)
class Lease:
    """Where a model keeps a lease: the ``holder`` and ``until`` fields, the setting that says
    how many seconds a lease lasts, and the holder field's value when nobody holds it."""

    holder: str
    until: str
    seconds: str
    nobody: Any = None

    def deadline(self) -> datetime:
        """When a lease taken (or renewed) now runs out."""
        return timezone.now() + timedelta(seconds=float(getattr(settings, self.seconds)))

    def is_live(self, row: Model) -> bool:
        """Someone holds ``row``'s lease and it has not run out."""
        until = getattr(row, self.until)
        return until is not None and until > timezone.now()

    def take(self, rows: QuerySet[Any], *, holder: Any) -> bool:
        """Take the lease of ``rows`` (one row) for ``holder`` unless a live lease holds it,
        even ``holder``'s own: a job delivered twice must not run twice at once."""
        now = timezone.now()
        free = Q(**{f"{self.until}__isnull": True}) | Q(**{f"{self.until}__lt": now})
        taken = rows.filter(free).update(**{self.holder: holder, self.until: self.deadline()})
        return bool(taken == 1)

    def held(self, rows: QuerySet[Any], *, holder: Any) -> bool:
        """``holder`` holds a live lease on ``rows``."""
        live = {self.holder: holder, f"{self.until}__gte": timezone.now()}
        return bool(rows.filter(**live).exists())

    def release(self, rows: QuerySet[Any], *, holder: Any) -> None:
        """Free the lease if ``holder`` still holds it (a newer holder keeps its own)."""
        rows.filter(**{self.holder: holder}).update(**{self.holder: self.nobody, self.until: None})
