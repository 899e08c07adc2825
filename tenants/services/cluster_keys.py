"""The life of an API key the platform makes on the cluster, whoever it is for (a user's
``ScopedKey``, a tenant's ``CatalogKey``): its lifetime, the one rotation, the renewal of keys
about to expire, and invalidation, one key or many at once.

A key is made on the cluster first (a network call, never inside a transaction), then its row
is written; a key whose row cannot be written is invalidated again (``forget_orphan``). A key
leaves ``active`` before the cluster is asked to invalidate it, so the platform stops reading
with it whatever the cluster does; one the cluster did not confirm stays "invalidation pending"
for the hourly renew task (``tenants.scoped_keys_renew``) to finish.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Generic, TypeVar

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from atlas_platform.cluster import ApiKey, Cluster, get_cluster, require_cluster
from atlas_platform.exceptions import ClusterUnavailable, Conflict
from tenants.models import ClusterKey

logger = logging.getLogger(__name__)

K = TypeVar("K", bound=ClusterKey)


def key_lifetime() -> timedelta:
    return timedelta(days=settings.ATLAS_SCOPED_KEY_TTL_DAYS)


def forget_orphan(cluster: Cluster, key: ApiKey) -> None:
    """Undo a key the database never recorded (best effort, logged if it fails)."""
    try:
        cluster.invalidate_api_key(key.id)
    except ClusterUnavailable:
        logger.error("orphaned API key left valid", extra={"key_id": key.id})


@dataclass(frozen=True)
class Rotation(Generic[K]):
    key: K
    old_key: K
    old_key_invalidated: bool


def cluster_key_rotate(
    *,
    current: K | None,
    create: Callable[[Cluster], ApiKey],
    record: Callable[[ApiKey, K], K],
    what: str,
    missing: str,
) -> Rotation[K]:
    """Create a new key, switch to it, then invalidate the old one (``current``).

    ``create`` makes the key on the cluster; ``record`` writes its row (``rotated_from`` the
    old one) and audit event, inside the transaction that takes the old key out of ``active``.
    If the cluster fails before the switch, nothing changes and the old key stays valid. If only
    the final invalidation fails, the new key is in use and the old one is left "invalidation
    pending" for the renew task to finish; the result says so. ``what`` names the key in
    messages ("key", "catalog key"); ``missing`` is the conflict when there is none to rotate.
    """
    cluster = require_cluster()
    if current is None:
        raise Conflict(missing)
    api_key = create(cluster)  # the network call, before any row is locked
    try:
        with transaction.atomic():
            old = (
                type(current)
                ._default_manager.select_for_update()
                .filter(pk=current.pk, status=ClusterKey.Status.ACTIVE)
                .first()
            )
            if old is None:
                raise Conflict(f"The {what} was rotated or invalidated meanwhile.")
            old.status = ClusterKey.Status.PENDING_INVALIDATION
            old.save(update_fields=["status"])
            new = record(api_key, old)
    except Exception:
        forget_orphan(cluster, api_key)
        raise
    try:
        cluster.invalidate_api_key(old.key_id)
    except ClusterUnavailable:
        logger.warning(f"old {what} left pending invalidation", extra={"key_id": old.key_id})
        return Rotation(key=new, old_key=old, old_key_invalidated=False)
    mark_invalidated(old)
    return Rotation(key=new, old_key=old, old_key_invalidated=True)


def rotate_due(keys: Iterable[K], rotate: Callable[[K], object], *, what: str) -> tuple[int, int]:
    """Rotate each of ``keys`` (the renew task's keys about to expire): how many were rotated,
    and how many failed (the cluster away, or rotated meanwhile; logged, retried next hour)."""
    rotated = failed = 0
    for key in keys:
        try:
            rotate(key)
            rotated += 1
        except (ClusterUnavailable, Conflict):
            logger.warning(f"{what} not renewed", extra={"key_id": key.key_id})
            failed += 1
    return rotated, failed


def mark_invalidated(key: ClusterKey) -> None:
    key.status = ClusterKey.Status.INVALIDATED
    key.invalidated_at = timezone.now()
    key.save(update_fields=["status", "invalidated_at"])


def mark_pending_invalidation(live: QuerySet[K]) -> list[K]:
    """Take the active or pending keys among ``live`` out of ``active``, in one transaction
    (the platform stops reading with them whatever the cluster does next)."""
    with transaction.atomic():
        keys = list(
            live.select_for_update().filter(
                status__in=[ClusterKey.Status.ACTIVE, ClusterKey.Status.PENDING_INVALIDATION]
            )
        )
        for key in keys:
            key.status = ClusterKey.Status.PENDING_INVALIDATION
            key.save(update_fields=["status"])
    return keys


def invalidate_pending(keys: Sequence[K], *, audit: Callable[[K], None]) -> int:
    """One cluster call invalidating ``keys``; then each is marked and audited. If the call
    fails they stay "invalidation pending" for the renew task. Returns how many it did."""
    if not keys:
        return 0
    cluster = get_cluster()
    if cluster is None:
        return 0
    try:
        cluster.invalidate_api_keys([k.key_id for k in keys])
    except ClusterUnavailable:
        logger.warning("keys left pending invalidation", extra={"keys": len(keys)})
        return 0
    with transaction.atomic():
        for key in keys:
            mark_invalidated(key)
            audit(key)
    return len(keys)
