"""The audit hook every state-changing service calls, and the one for reads of a named
person's data (``audit_read``)."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import models, transaction

from atlas_platform.context import current_actor, current_request_id
from tenants.models import AuditEvent, Tenant, User

logger = logging.getLogger(__name__)


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
    entry = AuditEntry(action, tenant, subject_user, metadata or {}, target)
    (event,) = _events([entry], "audit_record")
    event.save(force_insert=True)
    return event


@dataclass(frozen=True)
class AuditEntry:
    """One event for ``audit_record_many`` (``audit_record``'s arguments)."""

    action: str
    tenant: Tenant | None
    subject_user: User | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    target: models.Model | None = None  # saved already (its primary key is recorded)


def audit_record_many(entries: Sequence[AuditEntry]) -> list[AuditEvent]:
    """``audit_record`` for many events in one INSERT (a batch of writes settled together),
    each attributed to the current actor and request. Inside the service's transaction, as
    ``audit_record``."""
    if not entries:
        return []
    return AuditEvent.objects.bulk_create(_events(entries, "audit_record_many"))


def _events(entries: Sequence[AuditEntry], caller: str) -> list[AuditEvent]:
    """The entries' events (not saved), each attributed to the current actor and request."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError(f"{caller} must run inside the service's transaction.")
    actor = current_actor()
    request_id = current_request_id()
    return [
        AuditEvent(
            request_id=request_id,
            actor_type=actor.type,
            actor_id=actor.id,
            actor_label=actor.label,
            tenant=entry.tenant,
            subject_user=entry.subject_user,
            action=entry.action,
            target_type=entry.target._meta.label_lower if entry.target is not None else "",
            target_id=str(entry.target.pk) if entry.target is not None else "",
            metadata=entry.metadata,
        )
        for entry in entries
    ]


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


def audit_read(
    *,
    action: str,
    tenant: Tenant | None,
    subject_user: User | None,
    target_type: str = "",
    target_id: str = "",
    metadata: dict[str, Any] | None = None,
    burst: Sequence[str] = (),
    coalesce: bool = True,
) -> AuditEvent | None:
    """Record that the current actor read a named person's data (or was refused an action):
    one event in its own transaction, since a read changes nothing to commit it with.

    Bursts are coalesced: the same actor doing the same ``action`` on the same subject (and
    the same ``burst`` parts: a memory id, a query's hash) again within
    ``ATLAS_AUDIT_READ_WINDOW_S`` writes nothing more, so paging through a user's memories is
    one event, not one per page. The window is a marker in the shared cache (``cache.add``);
    when the cache cannot answer, every read is recorded (fail towards the trail). Returns the
    event, or None when the read was part of a recorded burst.
    """
    window = settings.ATLAS_AUDIT_READ_WINDOW_S if coalesce else 0
    if window > 0 and not _first_of_burst(action, tenant, subject_user, burst, window):
        return None
    actor = current_actor()
    with transaction.atomic():
        return AuditEvent.objects.create(
            request_id=current_request_id(),
            actor_type=actor.type,
            actor_id=actor.id,
            actor_label=actor.label,
            tenant=tenant,
            subject_user=subject_user,
            action=action,
            target_type=target_type,
            target_id=target_id[:128],
            metadata={**(metadata or {}), **({"coalesced_s": window} if window > 0 else {})},
        )


def _first_of_burst(
    action: str, tenant: Tenant | None, subject: User | None, burst: Sequence[str], window: int
) -> bool:
    actor = current_actor()
    # Tenant and user uids, not primary keys: a key never matches another database's rows.
    parts = [
        action,
        tenant.memory_id if tenant else "",
        subject.memory_id if subject else "",
        actor.type,
        actor.id,
    ]
    digest = hashlib.sha256("\x1f".join([*parts, *burst]).encode()).hexdigest()
    try:
        return bool(cache.add(f"atlas:audit-read:{digest}", 1, timeout=window))
    except Exception:  # the cache is down: record this read rather than lose it
        logger.warning("audit read burst marker unavailable; recording the read")
        return True


def query_digest(text: str) -> str:
    """What the trail keeps of a search a person's data was read with: a SHA-256 of the
    normalised query (never its text: audit rows are never erased, a query can be personal).
    The same query always gives the same digest, so an operator can check a suspected one."""
    return hashlib.sha256(" ".join(text.split()).casefold().encode()).hexdigest()
