"""Moving existing memories into the per-tenant index layout (``manage.py es_layout_migrate``):
documents of the index all tenants once shared, written with database primary keys as ids,
get their tenant's and user's globally unique ids and move to their tenant's index (or the
user's, under per-user statistics); a tenant whose statistics scope changed has its documents
moved between them. Every live scoped key is then rotated, so it names exactly the indices
its user's documents are in now, and every cluster-enforced tenant gets the catalog key its
catalog reads run with, if it has none yet."""

from __future__ import annotations

from dataclasses import dataclass

from atlas_platform.exceptions import ValidationError
from memory.engine.elasticsearch import ElasticsearchBackend
from memory.engine.elasticsearch.layout import Relocation
from memory.services.common import backend, store_errors
from memory.services.scoping import scoped_keys, tenant_layout
from tenants.models import ScopedKey, Tenant, User
from tenants.services.catalog_keys import catalog_key_current, catalog_key_provision
from tenants.services.scoped_keys import scoped_key_rotate


@dataclass(frozen=True)
class LayoutMigration:
    relocation: Relocation
    keys_rotated: int
    keys_failed: int
    catalog_keys_made: int = 0


def memory_layout_migrate(*, delete_legacy: bool = False) -> LayoutMigration:
    """Relocate every document of this deployment where the layout says, then rotate keys."""
    store = backend()
    if not isinstance(store, ElasticsearchBackend):
        raise ValidationError(
            "Only the Elasticsearch backend has an index layout.", code="not_elasticsearch"
        )
    tenants = {str(t.pk): t.memory_id for t in Tenant.objects.only("pk", "uid")}
    tenants.update({v: v for v in list(tenants.values())})
    users: dict[tuple[str, str], str] = {}
    for user in User.objects.select_related("tenant").only("pk", "uid", "tenant__uid"):
        users[(user.tenant.memory_id, str(user.pk))] = user.memory_id
        users[(user.tenant.memory_id, user.memory_id)] = user.memory_id

    def translate(tenant_id: str, user_id: str | None) -> tuple[str, str | None] | None:
        tenant = tenants.get(tenant_id)
        if tenant is None:
            return None
        if user_id is None:
            return tenant, None
        user = users.get((tenant, user_id))
        return None if user is None else (tenant, user)

    tenant_layout.clear()
    with store_errors():
        relocation = store.relocate(translate, delete_legacy=delete_legacy)
    rotated = failed = 0
    live = ScopedKey.objects.filter(status=ScopedKey.Status.ACTIVE).select_related("user__tenant")
    for key in list(live):
        try:
            scoped_key_rotate(user=key.user)
            rotated += 1
        except Exception:
            failed += 1
    made = 0
    dls = Tenant.objects.filter(
        status=Tenant.Status.ACTIVE, isolation_mode=Tenant.IsolationMode.DLS
    )
    for tenant in dls:
        if catalog_key_current(tenant=tenant) is not None:
            continue
        try:
            catalog_key_provision(tenant=tenant)
            made += 1
        except Exception:
            failed += 1
    scoped_keys.clear()
    return LayoutMigration(
        relocation=relocation, keys_rotated=rotated, keys_failed=failed, catalog_keys_made=made
    )
