"""The Elasticsearch backend: one index per tenant for every memory type
(``<prefix>-t-<tenant>``; ``client.Connection`` has the layout, with per-user indices for
tenants that ask), routed by user.

One index per tenant: document-level security hides documents, not term statistics, so tenants
that shared an index scored each other's recalls (a word-presence probe told which words other
tenants wrote). One index for every type, not one per type: a recall touches one shard per leg
instead of four, and with the legs returning ids only, the per-shard work (security checks,
query and fetch phases) was most of the cluster's CPU per recall (docs/performance.md). The
type is a keyword field every query filters on.

Uses only core features (BM25, dense_vector + ``knn`` query, ``function_score``, ``_msearch``,
optimistic concurrency) so it runs on the integ-test distribution and on any licence. The
work is split by job: ``client`` (connection, keys, errors), ``setup`` (templates), ``writes``,
``reads``, ``queries``, ``refresh`` (group refresh); this class is the contract over them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings

from atlas_platform.cluster import ClusterConfig
from memory.engine.base import MemoryBackend, require_personal
from memory.engine.elasticsearch import (
    archive,
    layout,
    reads,
    setup,
    snapshots,
    writer_reads,
    writes,
)
from memory.engine.elasticsearch.client import Connection, Layout, ScopedKeys
from memory.engine.types import (
    GrowthBucket,
    GrowthPoint,
    LegQuery,
    LegResults,
    MemoryDoc,
    MemoryType,
    Neighbours,
    ReadScope,
    SessionTurn,
    UsageBump,
)


class ElasticsearchBackend(MemoryBackend):
    """``keys`` gives users' scoped keys for reads in ``dls`` scopes (none: only ``filter``
    scopes can be read); ``layout`` says which tenants keep each user in an index of their own
    (none: every tenant shares one index among its users); ``deployment`` is the id stamped
    into the indices' metadata ("" skips the check that they are this deployment's)."""

    name = "elasticsearch"

    def __init__(
        self,
        *,
        config: ClusterConfig,
        dims: int,
        keys: ScopedKeys | None = None,
        layout: Layout | None = None,
        deployment: str = "",
    ) -> None:
        self.config = config
        self.dims = dims
        self._conn = Connection(config=config, keys=keys, layout=layout, deployment=deployment)

    def index_for(self, tenant_id: str, user_id: str | None) -> str:
        """The index that holds this tenant's (and user's) documents."""
        return self._conn.index_for(tenant_id, user_id)

    def ensure_ready(self) -> None:
        setup.ensure_ready(self._conn, dims=self.dims)

    def relocate(self, translate: layout.Translate, *, delete_legacy: bool) -> layout.Relocation:
        """Move documents where the layout says (``layout.relocate``)."""
        return layout.relocate(self._conn, translate, delete_legacy=delete_legacy)

    # --- backups (cluster snapshots, the administrator's credential) ---------------------------
    def backup(self, *, into: Path, name: str, admin: ClusterConfig | None) -> dict[str, Any]:
        location = settings.ATLAS_ES_SNAPSHOT_LOCATION
        return snapshots.snapshot_take(self.config, admin=admin, location=location, name=name)

    def restore(self, *, source: Path, detail: dict[str, Any], admin: ClusterConfig | None) -> None:
        snapshots.snapshot_restore(self.config, admin=admin, detail=detail)

    def is_empty(self) -> bool:
        return not snapshots.holds_documents(self.config, self._conn.writer)

    # --- writes (always the writer credential) -------------------------------------------------
    def write(self, docs: list[MemoryDoc]) -> None:
        writes.write(self._conn, docs)

    def create(self, docs: list[MemoryDoc]) -> set[str]:
        return writes.create(self._conn, docs)

    def writes_together(self) -> contextlib.AbstractContextManager[None]:
        return self._conn.refresh_once()

    def update(self, doc: MemoryDoc, mutate: Callable[[MemoryDoc], dict[str, Any]]) -> MemoryDoc:
        return writes.update(self._conn, doc, mutate)

    def record_usage(self, bumps: list[UsageBump]) -> int:
        return writes.record_usage(self._conn, bumps, super().record_usage)

    def sync(self) -> None:
        # Every index of the deployment: usage bumps wait for the periodic refresh otherwise.
        # Now, also inside a ``writes_together`` block (what it holds is searchable after).
        self._conn.after_write([self._conn.index_pattern], now=True)

    def expunge_deleted(self, *, tenant_id: str, user_id: str | None) -> bool:
        return writes.expunge_deleted(self._conn, tenant_id, user_id)

    def delete(self, doc: MemoryDoc) -> bool:
        return writes.delete(self._conn, doc)

    def delete_ids(
        self, *, tenant_id: str, user_id: str, memory_type: MemoryType, ids: list[str]
    ) -> list[str]:
        require_personal(memory_type)
        return writes.delete_ids(
            self._conn, tenant_id=tenant_id, user_id=user_id, memory_type=memory_type, ids=ids
        )

    # --- reads (scope filters always; the user's key under dls) --------------------------------
    def get_many(self, scope: ReadScope, memory_ids: list[str]) -> list[MemoryDoc]:
        return reads.get_many(self._conn, scope, memory_ids)

    def vectors(self, scope: ReadScope, memory_ids: list[str]) -> dict[str, list[float]]:
        return reads.vectors(self._conn, scope, memory_ids)

    def similarities(
        self, scope: ReadScope, memory_ids: list[str], vector: list[float]
    ) -> dict[str, float]:
        return reads.similarities(self._conn, scope, memory_ids, vector)

    def recall_legs(self, scope: ReadScope, query: LegQuery) -> LegResults:
        return reads.recall_legs(self._conn, scope, query)

    def scan(
        self,
        scope: ReadScope,
        *,
        memory_types: tuple[MemoryType, ...],
        include_superseded: bool = True,
        search_after: tuple[str, str] | None = None,
        limit: int = 500,
        only_superseded: bool = False,
        created_from: datetime | None = None,
        created_to: datetime | None = None,
    ) -> list[MemoryDoc]:
        return reads.scan(
            self._conn,
            scope,
            memory_types=memory_types,
            include_superseded=include_superseded,
            search_after=search_after,
            limit=limit,
            only_superseded=only_superseded,
            created_from=created_from,
            created_to=created_to,
        )

    def previous_turn(
        self, *, tenant_id: str, user_id: str, session_id: str, before: datetime
    ) -> MemoryDoc | None:
        return writer_reads.previous_turn(self._conn, tenant_id, user_id, session_id, before)

    def session_neighbours(
        self,
        scope: ReadScope,
        turns: list[SessionTurn],
        *,
        depth: int,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> dict[str, Neighbours]:
        return reads.session_neighbours(
            self._conn, scope, turns, depth=depth, since=since, until=until
        )

    def newest_timestamp(self, scope: ReadScope) -> datetime | None:
        return reads.newest_timestamp(self._conn, scope)

    def count(self, scope: ReadScope) -> dict[str, int]:
        return reads.count(self._conn, scope)

    def tenant_memory_totals(self, tenant_ids: list[str]) -> dict[str, int]:
        return writer_reads.tenant_memory_totals(self._conn, tenant_ids)

    def growth(self, tenant_id: str, *, bucket: GrowthBucket) -> list[GrowthPoint]:
        return writer_reads.growth(self._conn, tenant_id, bucket=bucket)

    def find_ids(
        self,
        *,
        tenant_id: str,
        user_id: str,
        memory_type: MemoryType,
        among: list[str] | None = None,
        limit: int = 500,
    ) -> list[str]:
        require_personal(memory_type)
        return writer_reads.find_ids(
            self._conn,
            tenant_id=tenant_id,
            user_id=user_id,
            memory_type=memory_type,
            among=among,
            limit=limit,
        )

    def count_ids(
        self,
        *,
        tenant_id: str,
        user_id: str,
        memory_type: MemoryType,
        among: list[str] | None = None,
    ) -> int:
        require_personal(memory_type)
        return writer_reads.count_ids(
            self._conn, tenant_id=tenant_id, user_id=user_id, memory_type=memory_type, among=among
        )

    # --- the archive (``archive``: an index beside each hot index) -----------------------------
    def archive_index(self, tenant_id: str, user_id: str | None) -> str:
        """The archive beside this tenant's (and user's) hot index."""
        return archive.archive_index(self._conn, tenant_id, user_id)

    def archive_superseded(
        self, *, tenant_id: str, user_id: str, before: datetime, limit: int = 500
    ) -> list[str]:
        return archive.move(
            self._conn, tenant_id=tenant_id, user_id=user_id, before=before, limit=limit
        )

    def archive_expire(
        self, *, tenant_id: str, user_id: str, before: datetime, limit: int = 500
    ) -> list[str]:
        return archive.expire(
            self._conn, tenant_id=tenant_id, user_id=user_id, before=before, limit=limit
        )

    def archive_count(self, *, tenant_id: str, user_id: str, among: list[str] | None = None) -> int:
        return archive.count(self._conn, tenant_id=tenant_id, user_id=user_id, among=among)
