"""Per-user Elasticsearch API keys whose role descriptor carries the document-level-security query.

The DLS query admits only documents of the key's tenant that belong to its user, plus the
tenant's catalog (documents of the tenant with no ``user_id``). The engine adds the same filters
to every query as well; the key is what makes the cluster enforce them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from atlas_platform.cluster import ApiKey, Cluster, require_cluster
from atlas_platform.exceptions import ClusterUnavailable, Conflict
from tenants.crypto import decrypt, encrypt
from tenants.models import ScopedKey, User
from tenants.services.audit import audit_record

logger = logging.getLogger(__name__)


def dls_query(*, tenant_id: str, user_id: str) -> dict[str, Any]:
    """Tenant T's documents that are user U's or nobody's (the catalog)."""
    return {
        "bool": {
            "filter": [{"term": {"tenant_id": tenant_id}}],
            "should": [
                {"term": {"user_id": user_id}},
                {"bool": {"must_not": [{"exists": {"field": "user_id"}}]}},
            ],
            "minimum_should_match": 1,
        }
    }


def role_descriptors(*, index_pattern: str, tenant_id: str, user_id: str) -> dict[str, Any]:
    """Read-only on the Atlas memory indices, limited by the DLS query."""
    return {
        "atlas_memory_reader": {
            "cluster": [],
            "indices": [
                {
                    "names": [index_pattern],
                    "privileges": ["read"],
                    "query": dls_query(tenant_id=tenant_id, user_id=user_id),
                }
            ],
        }
    }


def create_cluster_key(cluster: Cluster, user: User) -> ApiKey:
    """The user's new key on the cluster (a network call: never inside a transaction); record
    it with ``key_row`` in the transaction that follows."""
    stamp = timezone.now().strftime("%Y%m%dT%H%M%S")
    return cluster.create_api_key(
        name=f"atlas-{user.tenant.slug}-{user.pk}-{stamp}",
        role_descriptors=role_descriptors(
            index_pattern=cluster.config.memory_index_pattern,
            tenant_id=str(user.tenant_id),
            user_id=str(user.pk),
        ),
        metadata={"atlas_tenant_id": str(user.tenant_id), "atlas_user_id": str(user.pk)},
    )


def _forget_orphan(cluster: Cluster, key: ApiKey) -> None:
    """Undo a key the database never recorded (best effort, logged if it fails)."""
    try:
        cluster.invalidate_api_key(key.id)
    except ClusterUnavailable:
        logger.error("orphaned API key left valid", extra={"key_id": key.id})


def key_row(*, user: User, api_key: ApiKey, rotated_from: ScopedKey | None = None) -> ScopedKey:
    """The (encrypted) row of a key just created on the cluster. Call inside a transaction."""
    return ScopedKey.objects.create(
        user=user,
        key_id=api_key.id,
        key_name=f"atlas-{user.tenant.slug}-{user.pk}",
        encrypted_secret=encrypt(api_key.secret),
        rotated_from=rotated_from,
    )


def scoped_key_provision(*, user: User) -> ScopedKey:
    """Give a user their first (or, after invalidation, a new) scoped key.

    The cluster key is created first, outside any transaction; its row and audit event are
    then written in one. If they cannot be (another key became active meanwhile: the one
    active key per user constraint), the cluster key is invalidated again."""
    cluster = require_cluster()
    if ScopedKey.objects.filter(user=user, status=ScopedKey.Status.ACTIVE).exists():
        raise Conflict("The user already has an active key: rotate it instead.")
    api_key = create_cluster_key(cluster, user)
    try:
        with transaction.atomic():
            key = key_row(user=user, api_key=api_key)
            audit_record(
                action="key.provision",
                tenant=user.tenant,
                subject_user=user,
                target=key,
                metadata={"key_id": key.key_id},
            )
    except IntegrityError as exc:
        _forget_orphan(cluster, api_key)
        raise Conflict("The user already has an active key: rotate it instead.") from exc
    except Exception:
        _forget_orphan(cluster, api_key)
        raise
    return key


@dataclass(frozen=True)
class Rotation:
    key: ScopedKey
    old_key: ScopedKey
    old_key_invalidated: bool


def scoped_key_rotate(*, user: User) -> Rotation:
    """Create a new key, switch to it, then invalidate the old one.

    If the cluster fails before the switch, nothing changes and the old key stays valid. If only
    the final invalidation fails, the new key is in use and the old one is left marked
    "invalidation pending" for ``scoped_key_invalidate`` to finish; the result says so.
    """
    cluster = require_cluster()
    current = ScopedKey.objects.filter(user=user, status=ScopedKey.Status.ACTIVE).first()
    if current is None:
        raise Conflict("The user has no active key to rotate: provision one.")
    api_key = create_cluster_key(cluster, user)  # the network call, before any row is locked
    try:
        with transaction.atomic():
            old = (
                ScopedKey.objects.select_for_update()
                .filter(pk=current.pk, status=ScopedKey.Status.ACTIVE)
                .first()
            )
            if old is None:
                raise Conflict("The key was rotated or invalidated meanwhile.")
            old.status = ScopedKey.Status.PENDING_INVALIDATION
            old.save(update_fields=["status"])
            new = key_row(user=user, api_key=api_key, rotated_from=old)
            audit_record(
                action="key.rotate",
                tenant=user.tenant,
                subject_user=user,
                target=new,
                metadata={"key_id": new.key_id, "old_key_id": old.key_id},
            )
    except Exception:
        _forget_orphan(cluster, api_key)
        raise
    try:
        cluster.invalidate_api_key(old.key_id)
    except ClusterUnavailable:
        logger.warning("old key left pending invalidation", extra={"key_id": old.key_id})
        return Rotation(key=new, old_key=old, old_key_invalidated=False)
    _mark_invalidated(old)
    return Rotation(key=new, old_key=old, old_key_invalidated=True)


def scoped_key_invalidate(*, key: ScopedKey) -> ScopedKey:
    """Invalidate a key on the cluster (an active one, or one left pending by a rotation)."""
    if key.status == ScopedKey.Status.INVALIDATED:
        raise Conflict("The key is already invalidated.")
    cluster = require_cluster()
    cluster.invalidate_api_key(key.key_id)
    with transaction.atomic():
        _mark_invalidated(key)
        audit_record(
            action="key.invalidate",
            tenant=key.user.tenant,
            subject_user=key.user,
            target=key,
            metadata={"key_id": key.key_id},
        )
    return key


def _mark_invalidated(key: ScopedKey) -> None:
    key.status = ScopedKey.Status.INVALIDATED
    key.invalidated_at = timezone.now()
    key.save(update_fields=["status", "invalidated_at"])


def scoped_key_credentials(*, key: ScopedKey) -> ApiKey:
    """The decrypted key, for reads that run as the user."""
    return ApiKey(id=key.key_id, secret=decrypt(key.encrypted_secret))
