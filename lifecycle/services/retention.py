"""``retention_enforce``: each tenant's retention settings applied (beat,
``lifecycle.retention_enforce``, daily).

- ``Tenant.episode_retention_days``: users' episodes stored longer ago than that are deleted
  (page by page; one ``retention.episodes`` audit event per user with the count).
- ``Tenant.archive_retention_days``: users' archived facts (``lifecycle.services.archive``)
  superseded longer ago than that are deleted (one ``retention.archived_facts`` audit event
  per user with the count).
- ``Tenant.audit_retention_days``, never below ``ATLAS_AUDIT_RETENTION_FLOOR_DAYS``: audit
  events (``audit.expire`` records how many went) and the receipts of finished forget requests
  (``retention.receipts``) older than that are deleted.

Never touched: anything of a user under a legal hold (``User.legal_hold_at``) or named by an
open forget request (pending, approved, running or failed: its job and receipt must count
exactly what it erased).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from erasure.models import ForgetRequest
from memory.public import memory_archive_expire, memory_erase_page, memory_ids_stored_before
from tenants.models import Tenant, User
from tenants.services.audit import audit_expire, audit_record

PAGE = 500
OPEN = ("pending", "approved", "running", "failed")
FINISHED = ("done", "rejected")


@dataclass
class RetentionRun:
    """What one run deleted, per tenant slug."""

    episodes: dict[str, int] = field(default_factory=dict)
    archived_facts: dict[str, int] = field(default_factory=dict)
    audit_events: dict[str, int] = field(default_factory=dict)
    receipts: dict[str, int] = field(default_factory=dict)
    held_users: int = 0


def retention_enforce(*, now: datetime | None = None) -> RetentionRun:
    moment = now or timezone.now()
    run = RetentionRun()
    for tenant in Tenant.objects.filter(episode_retention_days__isnull=False):
        assert tenant.episode_retention_days is not None  # noqa: S101 - filtered above
        before = moment - timedelta(days=tenant.episode_retention_days)
        users = list(tenant.users.exclude(pk__in=kept_users(tenant)))
        run.episodes[tenant.slug] = sum(_expire_episodes(user, before) for user in users)
    for tenant in Tenant.objects.filter(archive_retention_days__isnull=False):
        assert tenant.archive_retention_days is not None  # noqa: S101 - filtered above
        before = moment - timedelta(days=tenant.archive_retention_days)
        users = list(tenant.users.exclude(pk__in=kept_users(tenant)))
        run.archived_facts[tenant.slug] = sum(_expire_archived(user, before) for user in users)
    for tenant in Tenant.objects.filter(audit_retention_days__isnull=False):
        assert tenant.audit_retention_days is not None  # noqa: S101 - filtered above
        days = max(tenant.audit_retention_days, settings.ATLAS_AUDIT_RETENTION_FLOOR_DAYS)
        before = moment - timedelta(days=days)
        kept = kept_users(tenant)
        run.receipts[tenant.slug] = _expire_receipts(tenant, before, kept)
        run.audit_events[tenant.slug] = audit_expire(tenant=tenant, before=before, keep_users=kept)
    run.held_users = User.objects.filter(legal_hold_at__isnull=False).count()
    return run


def kept_users(tenant: Tenant) -> set[int]:
    """The tenant's users retention leaves alone: under a legal hold, or named by an open
    forget request."""
    held = set(tenant.users.filter(legal_hold_at__isnull=False).values_list("pk", flat=True))
    named = ForgetRequest.objects.filter(tenant=tenant, status__in=OPEN, user__isnull=False)
    return held | set(named.values_list("user_id", flat=True))


def _expire_episodes(user: User, before: datetime) -> int:
    tenant_id, user_id = user.tenant.memory_id, user.memory_id
    deleted = 0
    while True:
        ids = memory_ids_stored_before(
            tenant_id=tenant_id, user_id=user_id, memory_type="episodic", before=before, limit=PAGE
        )
        gone = memory_erase_page(
            tenant_id=tenant_id, user_id=user_id, memory_type="episodic", ids=ids
        )
        deleted += len(gone)
        if len(ids) < PAGE or not gone:
            break
    if deleted:
        with transaction.atomic():
            audit_record(
                action="retention.episodes",
                tenant=user.tenant,
                subject_user=user,
                metadata={"deleted": deleted, "before": before.isoformat()},
            )
    return deleted


def _expire_archived(user: User, before: datetime) -> int:
    deleted = memory_archive_expire(
        tenant_id=user.tenant.memory_id, user_id=user.memory_id, before=before
    )
    if deleted:
        with transaction.atomic():
            audit_record(
                action="retention.archived_facts",
                tenant=user.tenant,
                subject_user=user,
                metadata={"deleted": deleted, "superseded_before": before.isoformat()},
            )
    return deleted


def _expire_receipts(tenant: Tenant, before: datetime, kept: set[int]) -> int:
    with transaction.atomic():
        old = ForgetRequest.objects.filter(
            tenant=tenant, status__in=FINISHED, created_at__lt=before
        ).exclude(user__in=kept)
        count = old.count()
        if count:
            old.delete()  # their progress rows and erased pages go with them
            audit_record(
                action="retention.receipts",
                tenant=tenant,
                metadata={"deleted": count, "before": before.isoformat()},
            )
    return count
