"""The platform's tables: the outbox of background jobs still to be sent to the broker."""

from __future__ import annotations

from django.db import models


class OutboxJob(models.Model):
    """A job a service queued whose message the broker has not taken yet.

    Written in the transaction that decided the job (so it exists exactly when the decision
    committed), deleted once the broker took the message. A row that stays (the broker was
    down, slow or frozen) is sent again by ``jobs_flush`` (beat every 30 s, and at worker
    start) once the broker is back. ``ref`` names what the job is for (``consolidation.run:42``)
    so a caller can tell "queued" from "waiting for the broker".
    """

    name = models.CharField(max_length=200)
    args = models.JSONField(default=list)
    queue = models.CharField(max_length=200)
    ref = models.CharField(max_length=200, blank=True, db_index=True)
    attempts = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.name}{tuple(self.args)}"
