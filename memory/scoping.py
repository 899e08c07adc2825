"""Read scopes for users and tenants: what the engine may show, and with which credential."""

from __future__ import annotations

import functools
import threading
import time

from django.conf import settings

from memory.engine.types import ApiKeyCredentials, Ranking, ReadScope
from memory.errors import MemoryStoreUnavailable
from tenants.models import Tenant, User
from tenants.services.scoped_keys import scoped_key_credentials

KEY_CACHE_MAX = 10_000  # users whose key a process keeps (one entry is ~200 bytes)


class ScopedKeyCache:
    """Users' current scoped keys, kept for ``ATLAS_SCOPED_KEY_CACHE_S`` seconds.

    Reading the key row (and decrypting it) on every recall cost about a millisecond of server
    CPU. Keeping it is safe because the cluster, not this cache, decides what a key may read: a
    kept key of a user whose key was rotated or invalidated since is refused by the cluster,
    the read then renews the key from the database once (``ReadScope.renew``), and a user left
    without a live key is refused (fail closed). The key only ever reads its own user's
    documents, so a kept copy can never show anyone else's.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._keys: dict[int, tuple[float, ApiKeyCredentials]] = {}

    def get(self, user: User) -> ApiKeyCredentials:
        now = time.monotonic()
        with self._lock:
            kept = self._keys.get(user.pk)
        if kept is not None and kept[0] > now:
            return kept[1]
        return self.reload(user)

    def reload(self, user: User) -> ApiKeyCredentials:
        """Read the user's live key from the database; keep it if caching is on."""
        key = user.current_key()
        if key is None:
            self.forget(user.pk)
            raise MemoryStoreUnavailable(
                f"User {user.external_id!r} has no scoped cluster key: provision one in the admin.",
                code="no_scoped_key",
            )
        plain = scoped_key_credentials(key=key)
        credentials = ApiKeyCredentials(id=plain.id, secret=plain.secret)
        ttl = settings.ATLAS_SCOPED_KEY_CACHE_S
        if ttl > 0:
            with self._lock:
                if len(self._keys) >= KEY_CACHE_MAX:
                    self._keys.clear()  # rare: a burst of distinct users; start over
                self._keys[user.pk] = (time.monotonic() + ttl, credentials)
        return credentials

    def forget(self, user_pk: int) -> None:
        with self._lock:
            self._keys.pop(user_pk, None)

    def clear(self) -> None:
        with self._lock:
            self._keys.clear()


scoped_keys = ScopedKeyCache()


def user_read_scope(user: User) -> ReadScope:
    """The user's own memories plus their tenant's catalog.

    On Elasticsearch in isolation mode ``dls`` the read runs with the user's scoped key (kept
    for a while, see ``ScopedKeyCache``); a user without a live key is refused (fail closed),
    never served with the writer credential.
    """
    tenant_id, user_id = str(user.tenant_id), str(user.pk)
    dls = (
        settings.ATLAS_MEMORY_BACKEND == "elasticsearch"
        and user.tenant.isolation_mode == Tenant.IsolationMode.DLS
    )
    if not dls:
        return ReadScope(tenant_id=tenant_id, user_id=user_id, isolation="filter")
    return ReadScope(
        tenant_id=tenant_id,
        user_id=user_id,
        isolation="dls",
        credentials=scoped_keys.get(user),
        renew=functools.partial(scoped_keys.reload, user),
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
