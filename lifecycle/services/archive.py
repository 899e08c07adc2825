"""``archive_superseded``: each tenant's superseded facts out of the hot index (beat,
``lifecycle.archive_superseded``, daily; ``manage.py atlas_archive`` runs it now).

``Tenant.archive_after_days``: a fact superseded longer ago than that moves to the user's
archive (``memory_archive_superseded``; on Elasticsearch the archive index beside the hot one,
embedded a table outside the recall snapshots). Nothing is deleted, so a legal hold or an open
forget request does not stop it: the fact is read, exported and erased from the archive as
before. Under ``dls`` a user's key made before the archive existed is rotated, so that their
reads of superseded facts (which run as the key) reach it. One ``archive.superseded`` audit
event per user with the count. How long archived facts are kept is retention's
(``Tenant.archive_retention_days``, ``retention.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from memory.public import memory_archive_superseded
from tenants.models import Tenant
from tenants.services.audit import audit_record
from tenants.services.scoped_keys import scoped_key_ensure_indices


@dataclass
class ArchiveRun:
    """Facts moved, per tenant slug."""

    moved: dict[str, int] = field(default_factory=dict)


def archive_superseded(*, now: datetime | None = None) -> ArchiveRun:
    moment = now or timezone.now()
    run = ArchiveRun()
    for tenant in Tenant.objects.filter(archive_after_days__isnull=False):
        assert tenant.archive_after_days is not None  # noqa: S101 - filtered above
        before = moment - timedelta(days=tenant.archive_after_days)
        run.moved[tenant.slug] = 0
        for user in tenant.users.order_by("pk"):
            if tenant.isolation_mode == Tenant.IsolationMode.DLS:
                # The user's reads of superseded facts run as their key: it must name the
                # archive before a fact moves there (a key made before the archive existed is
                # rotated; a key found up to date once is not read from the cluster again).
                scoped_key_ensure_indices(user=user)
            moved = memory_archive_superseded(
                tenant_id=tenant.memory_id, user_id=user.memory_id, before=before
            )
            if moved:
                with transaction.atomic():
                    audit_record(
                        action="archive.superseded",
                        tenant=tenant,
                        subject_user=user,
                        metadata={"moved": moved, "superseded_before": before.isoformat()},
                    )
            run.moved[tenant.slug] += moved
    return run
