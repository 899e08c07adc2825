"""Read scopes for users and tenants: what the engine may show, and with which credential."""

from __future__ import annotations

from django.conf import settings

from memory.engine.types import ApiKeyCredentials, Ranking, ReadScope
from memory.errors import MemoryStoreUnavailable
from tenants.models import Tenant, User
from tenants.services.scoped_keys import scoped_key_credentials


def user_read_scope(user: User) -> ReadScope:
    """The user's own memories plus their tenant's catalog.

    On Elasticsearch in isolation mode ``dls`` the read runs with the user's scoped key; a user
    without a live key is refused (fail closed), never served with the writer credential.
    """
    tenant_id, user_id = str(user.tenant_id), str(user.pk)
    dls = (
        settings.ATLAS_MEMORY_BACKEND == "elasticsearch"
        and user.tenant.isolation_mode == Tenant.IsolationMode.DLS
    )
    if not dls:
        return ReadScope(tenant_id=tenant_id, user_id=user_id, isolation="filter")
    key = user.current_key()
    if key is None:
        raise MemoryStoreUnavailable(
            f"User {user.external_id!r} has no scoped cluster key: provision one in the admin.",
            code="no_scoped_key",
        )
    credentials = scoped_key_credentials(key=key)
    return ReadScope(
        tenant_id=tenant_id,
        user_id=user_id,
        isolation="dls",
        credentials=ApiKeyCredentials(id=credentials.id, secret=credentials.secret),
    )


def catalog_scope(tenant: Tenant) -> ReadScope:
    """The tenant catalog alone (tenant-wide data; the engine's tenant filter applies)."""
    return ReadScope(tenant_id=str(tenant.pk), user_id=None, isolation="filter")


def tenant_ranking(tenant: Tenant, *, apply_decay: bool = True) -> Ranking:
    return Ranking(
        decay_offset_days=float(tenant.decay_offset_days),
        decay_scale_days=float(tenant.decay_scale_days),
        use_count_weight=tenant.use_count_weight,
        catalog_prior=tenant.catalog_prior,
        apply_decay=apply_decay,
    )
