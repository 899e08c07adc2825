"""Cluster keys after a restore: the database brings back key rows as they were at the backup,
but the cluster keeps its own record of which keys live (its security index is never in a
backup). A row the cluster no longer honours must not come back to life as ``active``."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from atlas_platform.cluster import get_cluster
from tenants.models import CatalogKey, ClusterKey, ScopedKey, Tenant, User
from tenants.services.audit import audit_record
from tenants.services.catalog_keys import catalog_key_restore
from tenants.services.cluster_keys import mark_invalidated
from tenants.services.scoped_keys import scoped_keys_restore

LIVE = (ClusterKey.Status.ACTIVE, ClusterKey.Status.PENDING_INVALIDATION)


@dataclass(frozen=True)
class KeyReconcile:
    invalidated: list[str]  # key ids the cluster no longer accepts (rows marked, audited)
    reprovisioned: int  # users and catalogs given a new key in their place


def cluster_keys_reconcile() -> KeyReconcile:
    """Mark every live key row whose key the cluster does not accept (invalidated, expired or
    unknown to it: a restore into a new cluster) invalidated, one audit event each; then give
    the users and ``dls`` catalogs left without a live key a new one (best effort, as a
    reactivation does). Nothing to do without a cluster."""
    cluster = get_cluster()
    if cluster is None:
        return KeyReconcile(invalidated=[], reprovisioned=0)
    scoped = list(ScopedKey.objects.filter(status__in=LIVE).select_related("user__tenant"))
    catalog = list(CatalogKey.objects.filter(status__in=LIVE).select_related("tenant"))
    rows: list[ScopedKey | CatalogKey] = [*scoped, *catalog]
    alive = cluster.api_keys_alive([row.key_id for row in rows])
    dead = [row for row in rows if row.key_id not in alive]
    for row in dead:
        tenant = row.user.tenant if isinstance(row, ScopedKey) else row.tenant
        with transaction.atomic():
            mark_invalidated(row)
            audit_record(
                action="key.invalidate",
                tenant=tenant,
                subject_user=row.user if isinstance(row, ScopedKey) else None,
                target=row,
                metadata={"key_id": row.key_id, "reason": "dead on the cluster after a restore"},
            )
    users = list(
        User.objects.filter(
            pk__in={row.user.pk for row in dead if isinstance(row, ScopedKey)}
        ).select_related("tenant")
    )
    made = scoped_keys_restore(users=users)
    tenants = Tenant.objects.filter(pk__in={r.tenant.pk for r in dead if isinstance(r, CatalogKey)})
    made += sum(1 for tenant in tenants if catalog_key_restore(tenant=tenant) is not None)
    return KeyReconcile(invalidated=[row.key_id for row in dead], reprovisioned=made)
