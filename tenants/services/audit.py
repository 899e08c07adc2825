"""The audit hook every state-changing service calls."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

from django.db import models, transaction

from atlas_platform.context import current_actor, current_request_id
from tenants.models import AuditEvent, Tenant, User


def audit_record(
    *,
    action: str,
    tenant: Tenant | None,
    subject_user: User | None = None,
    target: models.Model | None = None,
    metadata: dict[str, Any] | None = None,
) -> AuditEvent:
    """Append one event, attributed to the current actor and request.

    Must run inside the service's transaction so the event and the change commit together.
    ``metadata`` must never carry memory text.
    """
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("audit_record must run inside the service's transaction.")
    actor = current_actor()
    return AuditEvent.objects.create(
        request_id=current_request_id(),
        actor_type=actor.type,
        actor_id=actor.id,
        actor_label=actor.label,
        tenant=tenant,
        subject_user=subject_user,
        action=action,
        target_type=target._meta.label_lower if target is not None else "",
        target_id=str(target.pk) if target is not None else "",
        metadata=metadata or {},
    )


def audit_expire(*, tenant: Tenant, before: datetime, keep_users: Collection[int]) -> int:
    """Retention's one exception to append-only: delete the tenant's audit events older than
    ``before``, except those about ``keep_users`` (held, or named by an open forget request);
    then record how many went (an event of its own). Returns the count."""
    with transaction.atomic():
        connection = transaction.get_connection()
        if connection.vendor == "postgresql":  # the append-only trigger lets this one through
            with connection.cursor() as cursor:
                cursor.execute("SET LOCAL atlas.audit_expiry = 'on'")
        expired = AuditEvent.objects.filter(tenant=tenant, created_at__lt=before).exclude(
            subject_user__in=keep_users
        )
        deleted, _ = models.QuerySet.delete(expired)  # the queryset refuses a plain delete
        if deleted:
            audit_record(
                action="audit.expire",
                tenant=tenant,
                metadata={"deleted": deleted, "before": before.isoformat()},
            )
    return int(deleted)
