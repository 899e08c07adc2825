"""Per-user Elasticsearch API keys whose role descriptor carries the document-level-security query.

The DLS query admits only documents of the key's tenant that belong to its user, plus the
tenant's catalog (documents of the tenant with no ``user_id``). The engine adds the same filters
to every query as well; the key is what makes the cluster enforce them.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from atlas_platform.cluster import ApiKey, Cluster, cluster_call, get_cluster, require_cluster
from atlas_platform.exceptions import ClusterUnavailable, Conflict
from tenants.crypto import decrypt, encrypt
from tenants.models import ScopedKey, User
from tenants.services.audit import audit_record
from tenants.services.cluster_keys import (
    Rotation,
    cluster_key_rotate,
    forget_orphan,
    invalidate_pending,
    key_lifetime,
    mark_invalidated,
    mark_pending_invalidation,
    rotate_due,
)
from tenants.services.deployment import deployment_id

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


# What recall needs and nothing more: search and multi-search. Not the ``read`` privilege,
# which also grants get / mget by id, term vectors, explain and field caps (term vectors and
# explain would show an index's term statistics directly).
READER_PRIVILEGES = ["indices:data/read/search", "indices:data/read/msearch"]
KEY_NAMES_REMEMBERED_S = 7 * 24 * 3600  # a key found naming its indices: not read again for a week


def key_indices(cluster: Cluster, user: User) -> list[str]:
    """Exactly the indices the user's reads need: the tenant's index (its catalog, and the
    user's documents) and, under per-user statistics, the user's own index; and the archive
    beside the index of the user's documents (their superseded facts, for the reads that ask
    for them: include_superseded, history)."""
    config = cluster.config
    tenant_id = user.memory_tenant_id
    names = [config.tenant_index(tenant_id)]
    if user.tenant.statistics_scope == user.tenant.StatisticsScope.USER:
        names.insert(0, config.user_index(tenant_id, user.memory_id))
    return [*names, config.archive_index(names[0])]


def role_descriptors(*, indices: list[str], tenant_id: str, user_id: str) -> dict[str, Any]:
    """Search-only on the named indices, limited by the DLS query."""
    return {
        "atlas_memory_reader": {
            "cluster": [],
            "indices": [
                {
                    "names": indices,
                    "privileges": READER_PRIVILEGES,
                    "query": dls_query(tenant_id=tenant_id, user_id=user_id),
                    "allow_restricted_indices": False,
                }
            ],
        }
    }


def create_cluster_key(cluster: Cluster, user: User) -> ApiKey:
    """The user's new key on the cluster (a network call: never inside a transaction); record
    it with ``key_row`` in the transaction that follows. It expires after ``key_lifetime``."""
    stamp = timezone.now().strftime("%Y%m%dT%H%M%S")
    seconds = int(key_lifetime().total_seconds())
    return cluster.create_api_key(
        name=f"atlas-{user.tenant.slug}-{user.memory_id}-{stamp}",
        role_descriptors=role_descriptors(
            indices=key_indices(cluster, user),
            tenant_id=user.memory_tenant_id,
            user_id=user.memory_id,
        ),
        metadata={
            "atlas_deployment": deployment_id(),
            "atlas_tenant_id": user.memory_tenant_id,
            "atlas_user_id": user.memory_id,
        },
        expiration=f"{seconds}s",
    )


def key_row(*, user: User, api_key: ApiKey, rotated_from: ScopedKey | None = None) -> ScopedKey:
    """The (encrypted) row of a key just created on the cluster. Call inside a transaction."""
    return ScopedKey.objects.create(
        user=user,
        key_id=api_key.id,
        key_name=f"atlas-{user.tenant.slug}-{user.memory_id}",
        encrypted_secret=encrypt(api_key.secret),
        rotated_from=rotated_from,
        # A little before the cluster's own expiry (the key was made just before this row).
        expires_at=timezone.now() + key_lifetime() - timedelta(minutes=1),
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
        forget_orphan(cluster, api_key)
        raise Conflict("The user already has an active key: rotate it instead.") from exc
    except Exception:
        forget_orphan(cluster, api_key)
        raise
    return key


def scoped_key_rotate(*, user: User) -> Rotation[ScopedKey]:
    """Create a new key, switch to it, then invalidate the old one (``cluster_key_rotate``:
    the old key stays valid if the cluster fails before the switch, and is left "invalidation
    pending" if only its invalidation fails; the result says so)."""

    def record(api_key: ApiKey, old: ScopedKey) -> ScopedKey:
        new = key_row(user=user, api_key=api_key, rotated_from=old)
        audit_record(
            action="key.rotate",
            tenant=user.tenant,
            subject_user=user,
            target=new,
            metadata={"key_id": new.key_id, "old_key_id": old.key_id},
        )
        return new

    return cluster_key_rotate(
        current=ScopedKey.objects.filter(user=user, status=ScopedKey.Status.ACTIVE).first(),
        create=lambda cluster: create_cluster_key(cluster, user),
        record=record,
        what="key",
        missing="The user has no active key to rotate: provision one.",
    )


def scoped_key_names_indices(*, user: User) -> bool:
    """Whether the user's active key names every index ``key_indices`` gives now (one made
    before the archive does not name the archive beside the user's index); True when there is
    no key or no cluster (nothing to bring up to date here). A key found up to date is
    remembered by its id and indices (a key's grants never change), so the daily archive run
    reads each key from the cluster once, not once a day."""
    key = ScopedKey.objects.filter(user=user, status=ScopedKey.Status.ACTIVE).first()
    cluster = get_cluster()
    if key is None or cluster is None:
        return True
    wanted = sorted(key_indices(cluster, user))
    known = (
        "atlas:key-names:" + hashlib.sha256("\n".join([key.key_id, *wanted]).encode()).hexdigest()
    )
    if _cached(known):
        return True
    body = cluster_call(
        "read an API key",
        lambda: cluster.client.security.get_api_key(id=key.key_id, owner=True),
    )
    found = body.get("api_keys", [])
    if not found:
        return True  # unknown to the cluster: the renew loop and restores deal with that
    reader = found[0].get("role_descriptors", {}).get("atlas_memory_reader", {})
    named = {name for grant in reader.get("indices", []) for name in grant.get("names", [])}
    if not set(wanted) <= named:
        return False
    _remember(known)
    return True


def _cached(name: str) -> bool:
    try:
        return cache.get(name) is not None
    except Exception:  # the cache is down: read the key from the cluster instead
        logger.warning("key check cache unavailable; reading the key")
        return False


def _remember(name: str) -> None:
    try:
        cache.set(name, 1, timeout=KEY_NAMES_REMEMBERED_S)
    except Exception:  # the cache is down: the next run reads the key again
        logger.warning("key check cache unavailable; not remembered")


def scoped_key_ensure_indices(*, user: User) -> bool:
    """Rotate the user's key if it does not name every index their reads need now (a key
    made before the archive existed: its reads of superseded facts would leave archived ones
    out); whether it rotated."""
    if scoped_key_names_indices(user=user):
        return False
    scoped_key_rotate(user=user)
    return True


def scoped_key_invalidate(*, key: ScopedKey) -> ScopedKey:
    """Invalidate a key on the cluster (an active one, or one left pending by a rotation)."""
    if key.status == ScopedKey.Status.INVALIDATED:
        raise Conflict("The key is already invalidated.")
    cluster = require_cluster()
    cluster.invalidate_api_key(key.key_id)
    with transaction.atomic():
        mark_invalidated(key)
        _audit_invalidated(key)
    return key


def scoped_key_credentials(*, key: ScopedKey) -> ApiKey:
    """The decrypted key, for reads that run as the user."""
    return ApiKey(id=key.key_id, secret=decrypt(key.encrypted_secret))


def scoped_keys_withdraw(*, users: list[User]) -> int:
    """Invalidate every live key of ``users`` (a user disabled, a tenant suspended), at once.

    The rows leave ``active`` first, in one transaction, so the platform stops reading with
    them whatever the cluster does next; then one cluster call invalidates them all. If that
    call fails the rows stay "invalidation pending" and ``scoped_keys_renew`` retries them.
    Returns how many keys the cluster invalidated."""
    keys = mark_pending_invalidation(ScopedKey.objects.filter(user__in=users))
    return _invalidate_pending(keys)


def _invalidate_pending(keys: Sequence[ScopedKey]) -> int:
    return invalidate_pending(keys, audit=_audit_invalidated)


def _audit_invalidated(key: ScopedKey) -> None:
    audit_record(
        action="key.invalidate",
        tenant=key.user.tenant,
        subject_user=key.user,
        target=key,
        metadata={"key_id": key.key_id},
    )


def scoped_keys_restore(*, users: list[User]) -> int:
    """Give each active user of an active tenant among ``users`` whose keys were withdrawn
    (had one, has no live one) a new one (a user enabled again, a tenant reactivated); users
    never provisioned stay so. Best effort per user: a failure is logged and the user can be
    provisioned from the admin. Returns how many were made."""
    if get_cluster() is None:
        return 0
    made = 0
    for user in users:
        if user.status != User.Status.ACTIVE or not user.tenant.is_active:
            continue
        keys = ScopedKey.objects.filter(user=user)
        if not keys.exists() or keys.filter(status=ScopedKey.Status.ACTIVE).exists():
            continue
        try:
            scoped_key_provision(user=user)
        except Conflict:
            continue  # it has one
        except ClusterUnavailable:
            logger.warning("no key re-provisioned", extra={"user": user.pk})
            continue
        made += 1
    return made


@dataclass(frozen=True)
class Renewal:
    rotated: int
    failed: int
    invalidated: int


def scoped_keys_renew(*, now: Any = None) -> Renewal:
    """Rotate every active key that expires within ``ATLAS_SCOPED_KEY_RENEW_DAYS`` (or was
    made without an expiry) of a user who may still read, and finish invalidations left
    pending. Beat: ``tenants.scoped_keys_renew``, hourly."""
    moment = now or timezone.now()
    horizon = moment + timedelta(days=settings.ATLAS_SCOPED_KEY_RENEW_DAYS)
    due = (
        ScopedKey.objects.filter(status=ScopedKey.Status.ACTIVE)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__lte=horizon))
        .filter(user__status=User.Status.ACTIVE, user__tenant__status="active")
        .select_related("user__tenant")
    )
    rotated, failed = rotate_due(due, lambda key: scoped_key_rotate(user=key.user), what="key")
    pending = list(
        ScopedKey.objects.filter(status=ScopedKey.Status.PENDING_INVALIDATION).select_related(
            "user__tenant"
        )
    )
    return Renewal(rotated=rotated, failed=failed, invalidated=_invalidate_pending(pending))
