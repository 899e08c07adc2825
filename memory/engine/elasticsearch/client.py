"""The backend's connection: the index layout, the writer client, readers bound to users'
scoped keys, the group refresh, and the error mapping (``atlas_platform.cluster``'s, raising
``EngineError``).

Layout: one index per tenant (``<prefix>-t-<tenant id>``) holds its catalog and its users'
documents, so no tenant's term statistics ever score another tenant's recall. A tenant with
per-user statistics (``Layout.per_user``) keeps each user's documents in an index of their own
(``<prefix>-t-<tenant id>-u-<user id>``); its catalog stays in the tenant's index.

Under ``dls`` a read runs with the user's scoped key, so the cluster itself refuses another
user's documents; a read with no user (the tenant's catalog) runs with the tenant's catalog key,
which reads that tenant's catalog documents and nothing else. The keys come from a
``ScopedKeys`` provider that the memory app wires from the tenants app's key services
(``memory.services.scoping.scoped_keys``).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Callable, Iterator
from typing import Any, Protocol, TypeVar

from elasticsearch import ApiError, AuthenticationException, Elasticsearch, TransportError

from atlas_platform.cluster import ApiKey, Cluster, ClusterConfig, cluster_call, cluster_failure
from atlas_platform.exceptions import Unavailable
from memory.engine.base import EngineError
from memory.engine.elasticsearch.refresh import GroupRefresh
from memory.engine.types import MemoryDoc, ReadScope

# The indices written inside ``Connection.refresh_once`` (this thread's, this request's).
_held: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar(
    "atlas_refresh_held", default=None
)

Json = dict[str, Any]
T = TypeVar("T")

READER_CACHE_SIZE = 1024  # scoped-key clients kept, most recently used (one costs ~1 ms)


class ScopedKeys(Protocol):
    """Where the backend gets the key for a ``dls`` read: the user's scoped key, or for
    ``user_id`` None the tenant's catalog key."""

    def current(self, tenant_id: str, user_id: str | None) -> ApiKey:
        """The key; may be a copy kept from earlier. Raises when there is none."""

    def reload(self, tenant_id: str, user_id: str | None) -> ApiKey:
        """The key read afresh (the cluster refused the kept one: rotated since)."""


class Layout(Protocol):
    """Where the backend learns whether a tenant keeps each user's documents apart."""

    def per_user(self, tenant_id: str) -> bool:
        """Whether the tenant's users each have an index (and term statistics) of their own."""


def call(what: str, fn: Callable[[], T]) -> T:
    """One cluster call; a client-library failure becomes an ``EngineError``."""
    return cluster_call(what, fn, error=EngineError)


def failure(what: str, exc: Exception) -> Unavailable:
    """The ``EngineError`` to raise for a client-library failure (``cluster_failure``)."""
    return cluster_failure(what, exc, error=EngineError)


class Connection:
    """What every part of the backend shares: one per backend instance."""

    def __init__(
        self,
        *,
        config: ClusterConfig,
        keys: ScopedKeys | None,
        layout: Layout | None = None,
        deployment: str = "",
    ) -> None:
        self.config = config
        self.deployment = deployment
        self.index_pattern = config.memory_index_pattern
        self._layout = layout
        self._cluster = Cluster(config)
        self.writer = self._cluster.client  # writes: the write budget (ATLAS_ES_TIMEOUT_S)
        self.reader = self._cluster.reader  # reads: the shorter ATLAS_ES_READ_TIMEOUT_S
        self._keys = keys
        # Clients bound to users' scoped keys, kept per key (id and secret: a rotated key gets a
        # new one) so a request does not rebuild a client's ~90 namespace objects.
        self._reader_for = functools.lru_cache(maxsize=READER_CACHE_SIZE)(self._with_key)
        self.refreshes = GroupRefresh(self._refresh)

    def index_for(self, tenant_id: str, user_id: str | None) -> str:
        """The index that holds (or will hold) a document of this tenant and user."""
        if user_id is not None and self._layout is not None and self._layout.per_user(tenant_id):
            return self.config.user_index(tenant_id, user_id)
        return self.config.tenant_index(tenant_id)

    def doc_index(self, doc: MemoryDoc) -> str:
        return self.index_for(doc.tenant_id, doc.user_id)

    def scope_indices(self, scope: ReadScope) -> list[str]:
        """The indices a scope's documents can be in: the user's (if any) and the catalog's."""
        tenant = self.config.tenant_index(scope.tenant_id)
        return list(dict.fromkeys([self.index_for(scope.tenant_id, scope.user_id), tenant]))

    def read(self, scope: ReadScope, what: str, fn: Callable[[Elasticsearch], T]) -> T:
        """Run a read as the scope's credential: the writer, or under ``dls`` the user's key
        (the tenant's catalog key for a scope with no user). A key the cluster does not know
        (401: rotated or invalidated since it was kept) is re-read once; a scope left without
        a live key is refused by the provider, and a second refusal fails the read. Never
        falls back to the writer."""
        if scope.isolation != "dls":
            return call(what, lambda: fn(self.reader))
        if self._keys is None:
            raise EngineError("A dls read needs the backend to have a scoped-key provider.")
        tenant_id, user_id = scope.tenant_id, scope.user_id
        try:
            return fn(self._reader(self._keys.current(tenant_id, user_id)))
        except AuthenticationException:
            fresh = self._keys.reload(tenant_id, user_id)
            return call(what, lambda: fn(self._reader(fresh)))
        except (ApiError, TransportError) as exc:
            raise failure(what, exc) from exc

    def search(
        self, scope: ReadScope, routing: str, body: Json, *, indices: list[str] | None = None
    ) -> Json:
        """A search of the scope's indices (``indices``: these instead, e.g. with its archive)."""
        names = self.scope_indices(scope) if indices is None else indices
        response = self.read(
            scope,
            "search",
            lambda client: client.search(
                index=names,
                routing=routing,
                ignore_unavailable=True,
                **body,
            ),
        )
        result: Json = response.body
        return result

    def after_write(self, indices: list[str], *, now: bool = False) -> None:
        """Return once what was written before to ``indices`` is searchable
        (``refresh.GroupRefresh``); inside ``refresh_once`` (unless ``now``) the indices are
        kept for the block's one refresh instead."""
        held = _held.get()
        if held is not None and not now:
            held.update(indices)
            return
        self.refreshes.after_write(indices)

    @contextlib.contextmanager
    def refresh_once(self) -> Iterator[None]:
        """The writes of this block refreshed once, when it ends (nested: the outer one's)."""
        if _held.get() is not None:
            yield
            return
        held: set[str] = set()
        token = _held.set(held)
        try:
            yield
        except BaseException:
            _held.reset(token)
            with contextlib.suppress(Exception):  # what was written becomes visible anyway
                self.refreshes.after_write(held)
            raise
        _held.reset(token)
        self.refreshes.after_write(held)

    def _reader(self, key: ApiKey) -> Elasticsearch:
        client: Elasticsearch = self._reader_for(key)
        return client

    def _with_key(self, key: ApiKey) -> Elasticsearch:
        return self._cluster.as_api_key(key)

    def _refresh(self, index: str) -> None:
        # The whole index, where ``refresh=true`` on a write touched only the written shards: a
        # shard with nothing new skips its refresh, so more shards cost little.
        shards = call("refresh", lambda: self.writer.indices.refresh(index=index))["_shards"]
        if shards.get("failed"):
            raise EngineError(f"Elasticsearch could not refresh {index}: {shards}")
