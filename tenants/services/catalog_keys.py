"""Per-tenant catalog keys: the credential a ``dls`` tenant's catalog reads run with.

A tenant token reads its tenant's catalog with no user (``catalog_list``). Under ``dls`` that
read must be enforced by the cluster as users' reads are, so each such tenant holds one API key
granted search (and multi-search) on exactly its tenant index, with a DLS query admitting only
its catalog documents: no user's memory, no other tenant's document. The key follows the
tenant's lifecycle as users' keys follow theirs: made at onboarding and when the tenant turns
to ``dls``, rotated before it expires by the hourly ``tenants.scoped_keys_renew`` (which also
makes one for a ``dls`` tenant that lacks it), invalidated at once when the tenant is
suspended, made again when it is reactivated.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from atlas_platform.cluster import ApiKey, Cluster, get_cluster, require_cluster
from atlas_platform.exceptions import ClusterUnavailable, Conflict
from tenants.crypto import decrypt, encrypt
from tenants.models import CatalogKey, Tenant
from tenants.services.audit import audit_record
from tenants.services.cluster_keys import (
    cluster_key_rotate,
    forget_orphan,
    invalidate_pending,
    key_lifetime,
    mark_pending_invalidation,
    rotate_due,
)
from tenants.services.deployment import deployment_id
from tenants.services.scoped_keys import READER_PRIVILEGES

logger = logging.getLogger(__name__)
CATALOG = "catalog"


def catalog_dls_query(*, tenant_id: str) -> dict[str, Any]:
    """Tenant T's catalog documents: type catalog, of T, with no user."""
    return {
        "bool": {
            "filter": [
                {"term": {"tenant_id": tenant_id}},
                {"term": {"memory_type": CATALOG}},
            ],
            "must_not": [{"exists": {"field": "user_id"}}],
        }
    }


def catalog_role_descriptors(*, index: str, tenant_id: str) -> dict[str, Any]:
    """Search-only on the tenant's index (the catalog is always there), limited by the DLS
    query; the privileges of users' keys (no term vectors, explain, get by id, field caps)."""
    return {
        "atlas_catalog_reader": {
            "cluster": [],
            "indices": [
                {
                    "names": [index],
                    "privileges": READER_PRIVILEGES,
                    "query": catalog_dls_query(tenant_id=tenant_id),
                    "allow_restricted_indices": False,
                }
            ],
        }
    }


def create_catalog_cluster_key(cluster: Cluster, tenant: Tenant) -> ApiKey:
    """The tenant's new catalog key on the cluster (a network call: never in a transaction)."""
    stamp = timezone.now().strftime("%Y%m%dT%H%M%S")
    return cluster.create_api_key(
        name=f"atlas-{tenant.slug}-catalog-{stamp}",
        role_descriptors=catalog_role_descriptors(
            index=cluster.config.tenant_index(tenant.memory_id), tenant_id=tenant.memory_id
        ),
        metadata={
            "atlas_deployment": deployment_id(),
            "atlas_tenant_id": tenant.memory_id,
            "atlas_catalog": True,
        },
        expiration=f"{int(key_lifetime().total_seconds())}s",
    )


def catalog_key_row(
    *, tenant: Tenant, api_key: ApiKey, rotated_from: CatalogKey | None = None
) -> CatalogKey:
    """The (encrypted) row of a catalog key just made on the cluster; inside a transaction."""
    return CatalogKey.objects.create(
        tenant=tenant,
        key_id=api_key.id,
        key_name=f"atlas-{tenant.slug}-catalog",
        encrypted_secret=encrypt(api_key.secret),
        rotated_from=rotated_from,
        expires_at=timezone.now() + key_lifetime() - timedelta(minutes=1),
    )


def _audit(action: str, key: CatalogKey, **extra: Any) -> None:
    audit_record(
        action=action,
        tenant=key.tenant,
        target=key,
        metadata={"key_id": key.key_id, **extra},
    )


def catalog_key_current(*, tenant: Tenant) -> CatalogKey | None:
    return (
        CatalogKey.objects.filter(tenant=tenant, status=CatalogKey.Status.ACTIVE)
        .order_by("-created_at")
        .first()
    )


def catalog_key_provision(*, tenant: Tenant) -> CatalogKey:
    """Give the tenant a catalog key (it has no active one). The cluster key first, outside
    any transaction; then its row and audit event in one; a key whose row cannot be written
    (another became active meanwhile) is invalidated again."""
    cluster = require_cluster()
    if catalog_key_current(tenant=tenant) is not None:
        raise Conflict("The tenant already has an active catalog key: rotate it instead.")
    api_key = create_catalog_cluster_key(cluster, tenant)
    try:
        with transaction.atomic():
            key = catalog_key_row(tenant=tenant, api_key=api_key)
            _audit("catalog_key.provision", key)
    except IntegrityError as exc:
        forget_orphan(cluster, api_key)
        raise Conflict("The tenant already has an active catalog key.") from exc
    except Exception:
        forget_orphan(cluster, api_key)
        raise
    return key


def catalog_key_ensure(*, tenant: Tenant) -> CatalogKey | None:
    """The tenant's active catalog key, made first when a ``dls`` tenant that is active lacks
    one; None for another tenant (whose catalog reads need no key)."""
    if tenant.isolation_mode != Tenant.IsolationMode.DLS or not tenant.is_active:
        return None
    current = catalog_key_current(tenant=tenant)
    if current is not None:
        return current
    try:
        return catalog_key_provision(tenant=tenant)
    except Conflict:  # made meanwhile by another caller
        return catalog_key_current(tenant=tenant)


def catalog_key_rotate(*, tenant: Tenant) -> CatalogKey:
    """A new catalog key, switched to, then the old one invalidated (left "invalidation
    pending" for the renew task if the cluster does not answer that last call):
    ``cluster_key_rotate``, as for users' keys."""

    def record(api_key: ApiKey, old: CatalogKey) -> CatalogKey:
        new = catalog_key_row(tenant=tenant, api_key=api_key, rotated_from=old)
        _audit("catalog_key.rotate", new, old_key_id=old.key_id)
        return new

    rotation = cluster_key_rotate(
        current=catalog_key_current(tenant=tenant),
        create=lambda cluster: create_catalog_cluster_key(cluster, tenant),
        record=record,
        what="catalog key",
        missing="The tenant has no active catalog key to rotate.",
    )
    return rotation.key


def catalog_key_credentials(*, key: CatalogKey) -> ApiKey:
    """The decrypted key, for the tenant's catalog reads."""
    return ApiKey(id=key.key_id, secret=decrypt(key.encrypted_secret))


def catalog_keys_withdraw(*, tenants: Sequence[Tenant]) -> int:
    """Invalidate the live catalog keys of ``tenants`` (suspended) at once: the rows leave
    ``active`` first, then one cluster call; if it fails they stay "invalidation pending" and
    the renew task retries. Returns how many the cluster invalidated."""
    keys = mark_pending_invalidation(CatalogKey.objects.filter(tenant__in=list(tenants)))
    return _invalidate_pending(keys)


def _invalidate_pending(keys: Sequence[CatalogKey]) -> int:
    return invalidate_pending(keys, audit=lambda key: _audit("catalog_key.invalidate", key))


def catalog_key_restore(*, tenant: Tenant) -> CatalogKey | None:
    """A reactivated ``dls`` tenant's catalog key again (best effort: a cluster failure is
    logged, and the renew task makes it within the hour)."""
    if get_cluster() is None:
        return None
    try:
        return catalog_key_ensure(tenant=tenant)
    except ClusterUnavailable:
        logger.warning("no catalog key re-provisioned", extra={"tenant": tenant.pk})
        return None


@dataclass(frozen=True)
class CatalogRenewal:
    made: int
    rotated: int
    failed: int
    invalidated: int


def catalog_keys_renew(*, now: Any = None, horizon_days: float) -> CatalogRenewal:
    """Rotate active catalog keys expiring within ``horizon_days``, make the missing key of
    every active ``dls`` tenant, finish invalidations left pending (``scoped_keys_renew``'s
    part for tenants)."""
    if get_cluster() is None:
        return CatalogRenewal(made=0, rotated=0, failed=0, invalidated=0)
    moment = now or timezone.now()
    horizon = moment + timedelta(days=horizon_days)
    due = (
        CatalogKey.objects.filter(status=CatalogKey.Status.ACTIVE, tenant__status="active")
        .filter(Q(expires_at__isnull=True) | Q(expires_at__lte=horizon))
        .select_related("tenant")
    )
    rotated, failed = rotate_due(
        due, lambda key: catalog_key_rotate(tenant=key.tenant), what="catalog key"
    )
    made = 0
    keyless = Tenant.objects.filter(
        status=Tenant.Status.ACTIVE, isolation_mode=Tenant.IsolationMode.DLS
    ).exclude(catalog_keys__status=CatalogKey.Status.ACTIVE)
    for tenant in keyless:
        try:
            catalog_key_provision(tenant=tenant)
            made += 1
        except (ClusterUnavailable, Conflict):
            logger.warning("no catalog key made", extra={"tenant": tenant.pk})
            failed += 1
    pending = list(
        CatalogKey.objects.filter(status=CatalogKey.Status.PENDING_INVALIDATION).select_related(
            "tenant"
        )
    )
    return CatalogRenewal(
        made=made, rotated=rotated, failed=failed, invalidated=_invalidate_pending(pending)
    )
