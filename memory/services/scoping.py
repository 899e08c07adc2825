"""Read scopes for users and tenants, and the users' scoped keys the engine reads ``dls``
scopes with (``scoped_keys``, wired into the backend by ``common.backend``)."""

from __future__ import annotations

import threading
import time

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError

from atlas_platform.cluster import ApiKey
from memory.engine.types import Ranking, ReadScope
from memory.errors import CatalogKeyMissing, MemoryStoreUnavailable
from tenants.models import CatalogKey, ScopedKey, Tenant, User
from tenants.services.catalog_keys import catalog_key_credentials
from tenants.services.scoped_keys import scoped_key_credentials

KEY_CACHE_MAX = 10_000  # users whose key a process keeps (one entry is ~200 bytes)


class ScopedKeyCache:
    """Users' current scoped keys (and, for ``user_id`` None, tenants' catalog keys), kept for
    ``ATLAS_SCOPED_KEY_CACHE_S`` seconds: the engine's ``ScopedKeys`` provider.

    Reading the key row (and decrypting it) on every recall cost about a millisecond of server
    CPU. Keeping it is safe because the cluster, not this cache, decides what a key may read: a
    kept key of a user whose key was rotated or invalidated since is refused by the cluster,
    the engine then re-reads the key from the database once (``reload``), and a user left
    without a live key is refused (fail closed). The key only ever reads its own user's
    documents, so a kept copy can never show anyone else's.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._keys: dict[tuple[str, str | None], tuple[float, ApiKey]] = {}

    def current(self, tenant_id: str, user_id: str | None) -> ApiKey:
        now = time.monotonic()
        with self._lock:
            kept = self._keys.get((tenant_id, user_id))
        if kept is not None and kept[0] > now:
            return kept[1]
        return self.reload(tenant_id, user_id)

    def reload(self, tenant_id: str, user_id: str | None) -> ApiKey:
        """Read the live key from the database; keep it if caching is on."""
        if user_id is None:
            credentials = self._catalog_key(tenant_id)
        else:
            credentials = self._user_key(tenant_id, user_id)
        ttl = settings.ATLAS_SCOPED_KEY_CACHE_S
        if ttl > 0:
            with self._lock:
                if len(self._keys) >= KEY_CACHE_MAX:
                    self._keys.clear()  # rare: a burst of distinct users; start over
                self._keys[(tenant_id, user_id)] = (time.monotonic() + ttl, credentials)
        return credentials

    def _user_key(self, tenant_id: str, user_id: str) -> ApiKey:
        key = _active_key(tenant_id, user_id)
        if key is None or key.is_expired:
            self.forget(tenant_id, user_id)
            user = _user(tenant_id, user_id)
            external = [user.external_id] if user is not None else []
            raise MemoryStoreUnavailable(
                f"User {next(iter(external), user_id)!r} has no scoped cluster key: provision "
                "one in the admin.",
                code="no_scoped_key",
            )
        return scoped_key_credentials(key=key)

    def _catalog_key(self, tenant_id: str) -> ApiKey:
        key = _active_catalog_key(tenant_id)
        if key is None or key.is_expired:
            self.forget(tenant_id, None)
            raise CatalogKeyMissing(f"Tenant {tenant_id} has no live catalog key.")
        return catalog_key_credentials(key=key)

    def forget(self, tenant_id: str, user_id: str | None) -> None:
        with self._lock:
            self._keys.pop((tenant_id, user_id), None)

    def clear(self) -> None:
        with self._lock:
            self._keys.clear()


scoped_keys = ScopedKeyCache()


def _active_key(tenant_id: str, user_id: str) -> ScopedKey | None:
    """The live key of the user with these memory ids (one query)."""
    try:
        return (
            ScopedKey.objects.filter(
                user__uid=user_id, user__tenant__uid=tenant_id, status=ScopedKey.Status.ACTIVE
            )
            .order_by("-created_at")
            .first()
        )
    except DjangoValidationError:  # not a uuid: no such user
        return None


def _active_catalog_key(tenant_id: str) -> CatalogKey | None:
    """The live catalog key of the tenant with this memory id (one query)."""
    try:
        return (
            CatalogKey.objects.filter(tenant__uid=tenant_id, status=CatalogKey.Status.ACTIVE)
            .order_by("-created_at")
            .first()
        )
    except DjangoValidationError:  # not a uuid: no such tenant
        return None


def _user(tenant_id: str, user_id: str) -> User | None:
    """The user with these memory ids (``User.memory_id``), if any."""
    try:
        return User.objects.filter(uid=user_id, tenant__uid=tenant_id).first()
    except DjangoValidationError:  # not a uuid: no such user
        return None


class TenantLayout:
    """The engine's ``Layout``: whether a tenant keeps each user's statistics apart
    (``Tenant.statistics_scope``), kept for ``LAYOUT_CACHE_S`` (the setting changes only
    with ``manage.py es_layout_migrate``, which clears it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: dict[str, tuple[float, bool]] = {}

    def per_user(self, tenant_id: str) -> bool:
        now = time.monotonic()
        with self._lock:
            kept = self._kept.get(tenant_id)
        if kept is not None and kept[0] > now:
            return kept[1]
        try:
            scope = (
                Tenant.objects.filter(uid=tenant_id)
                .values_list("statistics_scope", flat=True)
                .first()
            )
        except DjangoValidationError:
            scope = None
        per_user = scope == Tenant.StatisticsScope.USER
        with self._lock:
            if len(self._kept) >= KEY_CACHE_MAX:
                self._kept.clear()
            self._kept[tenant_id] = (now + LAYOUT_CACHE_S, per_user)
        return per_user

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()


LAYOUT_CACHE_S = 30.0
tenant_layout = TenantLayout()


def user_read_scope(user: User) -> ReadScope:
    """The user's own memories plus their tenant's catalog, in the tenant's isolation mode.

    Under ``dls`` a backend that can (Elasticsearch) reads with the user's scoped key (kept for
    a while, see ``ScopedKeyCache``); a user without a live key is refused (fail closed),
    never served with the writer credential.
    """
    dls = user.tenant.isolation_mode == Tenant.IsolationMode.DLS
    return ReadScope(
        tenant_id=user.memory_tenant_id,
        user_id=user.memory_id,
        isolation="dls" if dls else "filter",
    )


def writer_scope(*, tenant_id: str, user_id: str) -> ReadScope:
    """A user's memories read with the platform's own credential (an erasure must see every
    document of the user, whatever the state of their key)."""
    return ReadScope(tenant_id=tenant_id, user_id=user_id, isolation="filter")


def catalog_scope(tenant: Tenant) -> ReadScope:
    """The tenant catalog alone, read with the platform's own credential (the catalog's
    writes: import, replace, delete; the engine's tenant filter applies)."""
    return ReadScope(tenant_id=tenant.memory_id, user_id=None, isolation="filter")


def catalog_read_scope(tenant: Tenant) -> ReadScope:
    """The tenant catalog as a tenant token reads it, in the tenant's isolation mode: under
    ``dls`` with the tenant's catalog key (its catalog documents only, enforced by the
    cluster); a tenant without a live one is refused (fail closed), never read as the writer."""
    dls = tenant.isolation_mode == Tenant.IsolationMode.DLS
    return ReadScope(tenant_id=tenant.memory_id, user_id=None, isolation="dls" if dls else "filter")


def tenant_ranking(tenant: Tenant, *, apply_decay: bool = True) -> Ranking:
    return Ranking(
        decay_offset_days=float(tenant.decay_offset_days),
        decay_scale_days=float(tenant.decay_scale_days),
        use_count_weight=tenant.use_count_weight,
        catalog_prior=tenant.catalog_prior,
        apply_decay=apply_decay,
    )
