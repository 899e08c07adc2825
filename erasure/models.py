"""Operator forget requests (erasure at scale) and the per-index progress of their jobs.

What these rows may hold: memory ids, counts, labels of who asked and approved. Never the text
of a memory. The one exception is a ``query`` scope's query text, which is itself potentially
personal: it is kept only until it is resolved into ids at approval (or the request is
rejected), then wiped from the row. Audit events never carry it.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models

from tenants.models import Tenant, User


class ForgetRequest(models.Model):
    """An erasure: listed memory ids, everything matching a query, or all of a user's memories.

    pending -> approved -> running -> done | failed (retry: failed -> approved); pending ->
    rejected. ``memory_ids`` are the targets: as listed (scope ``ids``), or the query's matches
    resolved once at approval (scope ``query``); empty for scope ``user``.
    """

    class Scope(models.TextChoices):
        IDS = "ids", "Listed memory ids"
        QUERY = "query", "Everything matching a query"
        USER = "user", "All of the user's memories"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending approval"
        APPROVED = "approved", "Approved (queued)"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed (retryable)"
        REJECTED = "rejected", "Rejected"

    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="forget_requests")
    # Null once the user record itself was erased; ``user_ref`` keeps the subject's id.
    user = models.ForeignKey(
        User, null=True, blank=True, on_delete=models.SET_NULL, related_name="forget_requests"
    )
    user_ref = models.CharField(max_length=32)
    scope = models.CharField(max_length=8, choices=Scope.choices)
    memory_ids = models.JSONField(default=list, blank=True)
    query = models.TextField(blank=True)  # wiped once resolved into memory_ids, or on reject
    targets_resolved = models.BooleanField(default=False)
    include_supporting_episodes = models.BooleanField(default=False)
    delete_user_record = models.BooleanField(default=False)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    reason = models.TextField(blank=True)  # why it was rejected, or why it failed
    # Why the erasure is asked for, and the ticket it answers (required of operators).
    justification = models.TextField(blank=True)
    ticket = models.CharField(max_length=200, blank=True)
    # The dry runs (erasure.services.preview): counts, span, ids' count and hash, no text.
    preview_at_open = models.JSONField(null=True, blank=True)
    preview_approved = models.JSONField(null=True, blank=True)
    # A query scope's trace once its text is wiped (the normalised query's SHA-256).
    query_sha256 = models.CharField(max_length=64, blank=True)
    requested_by_type = models.CharField(max_length=16)  # operator | token
    requested_by_id = models.CharField(max_length=64)
    requested_by_label = models.CharField(max_length=200)
    approver = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    approver_label = models.CharField(max_length=200, blank=True)
    retry_count = models.PositiveIntegerField(default=0)
    # The job's lease: a worker holds the request while the lease is live (renewed per page).
    lease_owner = models.CharField(max_length=64, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    verified = models.BooleanField(null=True, blank=True)
    receipt = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["status", "lease_expires_at"])]

    def __str__(self) -> str:
        return f"Forget request {self.pk} ({self.get_scope_display()}, {self.status})"


class ErasureProgress(models.Model):
    """One index of one request's job: what it deleted, and the page it is about to delete.

    A page's ids are journaled (``pending_ids``) and committed before the store deletes them;
    the counts move from pending to ``deleted`` in the commit after. A worker killed in between
    finds the journal on resume and finishes that page (deletes are idempotent), so every
    document is counted exactly once.
    """

    request = models.ForeignKey(ForgetRequest, on_delete=models.CASCADE, related_name="progress")
    kind = models.CharField(max_length=32)  # memory type: episodic | semantic | procedural
    deleted = models.PositiveIntegerField(default=0)
    pages = models.PositiveIntegerField(default=0)
    pending_ids = models.JSONField(default=list, blank=True)
    done = models.BooleanField(default=False)
    remaining = models.IntegerField(null=True, blank=True)  # verification count, once checked
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["request", "id"]
        constraints = [
            models.UniqueConstraint(fields=["request", "kind"], name="one_progress_per_index")
        ]

    def __str__(self) -> str:
        return f"{self.kind}: {self.deleted} deleted"

    def erased_ids(self) -> list[str]:
        return [i for page in self.erased_pages.all() for i in page.ids]

    def as_receipt(self) -> dict[str, Any]:
        return {"deleted": self.deleted, "remaining": self.remaining, "ids": self.erased_ids()}


class ErasedPage(models.Model):
    """The ids one page erased, written in the same commit that counts them (one row per page,
    so a long job never rewrites what it erased before)."""

    progress = models.ForeignKey(
        ErasureProgress, on_delete=models.CASCADE, related_name="erased_pages"
    )
    ids = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["progress", "id"]

    def __str__(self) -> str:
        return f"{len(self.ids)} id(s)"
