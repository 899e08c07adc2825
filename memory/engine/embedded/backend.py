"""The embedded backend: the memory contract in-process, over its own SQLite file.

Each process keeps an owner's vectors and ranking columns in numpy (``snapshots``) and reads back
only the rows written since, because a turn writes and then recalls, and reloading 10k rows each
time would cost more than the recall itself. Several web workers may write at once: WAL, a busy
timeout, one connection per thread and process, short ``BEGIN IMMEDIATE`` write transactions,
and each read inside one snapshot (``store``). The legs are in ``legs``; owners in ``scopes``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from atlas_platform.cluster import ClusterConfig
from memory.engine.base import EngineError, MemoryBackend, require_personal
from memory.engine.embedded import ann, archive, legs
from memory.engine.embedded.scopes import owner_key, recall_owners, scope_owners, user_where
from memory.engine.embedded.snapshots import sortable
from memory.engine.embedded.store import (
    CACHE_BYTES,
    SCHEMA,
    Store,
    bump,
    decode,
    encode,
    engine_errors,
    migrate,
    new_instance,
    store_rows,
    unindex_row,
)
from memory.engine.types import (
    ENTITY,
    MEMORY_TYPES,
    GrowthBucket,
    GrowthPoint,
    LegQuery,
    LegResults,
    MemoryDoc,
    MemoryType,
    Neighbours,
    ReadScope,
    RecallFilter,
    SessionTurn,
)

BACKUP_FILE = "memory.sqlite3"


class EmbeddedBackend(MemoryBackend):
    """The contract over a SQLite file at ``path`` (FTS5 for BM25, numpy for cosine; an
    owner's dense index past ``ann_min_rows`` vectors)."""

    name = "embedded"

    def __init__(
        self,
        *,
        path: Path,
        dims: int,
        cache_bytes: int = CACHE_BYTES,
        ann_min_rows: int = ann.MIN_ROWS,
    ) -> None:
        self.path = Path(path)
        self.dims = dims
        self._store = Store(
            path=self.path, dims=dims, cache_bytes=cache_bytes, ann_min_rows=ann_min_rows
        )

    def ensure_ready(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with engine_errors():
            (mode,) = self._store.connection().execute("PRAGMA journal_mode = WAL").fetchone()
        if mode != "wal":  # e.g. a network file system: concurrent writers would not be safe
            raise EngineError(f"embedded store {self.path}: WAL unavailable (mode {mode})")
        with self._store.transaction(write=True) as conn:
            for statement in SCHEMA:
                conn.execute(statement)
            # The archive's view names memories' columns: made again after a migration's
            # ALTER TABLE (which a view over the table would refuse).
            conn.execute("DROP VIEW IF EXISTS memories_all")
            migrate(conn)
            for statement in archive.SCHEMA:
                conn.execute(statement)
            conn.execute("INSERT OR IGNORE INTO settings VALUES ('dims', ?)", (self.dims,))
            conn.execute("INSERT OR IGNORE INTO settings VALUES ('instance', ?)", (new_instance(),))
            (dims,) = conn.execute("SELECT value FROM settings WHERE name = 'dims'").fetchone()
        if dims != self.dims:  # another embedding model wrote these vectors
            raise EngineError(f"embedded store {self.path} holds {dims}-d vectors, not {self.dims}")

    # --- backups (SQLite's online backup) ------------------------------------------------------
    def backup(self, *, into: Path, name: str, admin: ClusterConfig | None) -> dict[str, Any]:
        target = into / BACKUP_FILE
        with engine_errors(), contextlib.closing(sqlite3.connect(target)) as copy:
            # One consistent copy of the whole file while writers go on (pages written
            # meanwhile restart the copy of what they touched; SQLite's backup API).
            self._store.connection().backup(copy)
        return {"file": BACKUP_FILE}

    def restore(self, *, source: Path, detail: dict[str, Any], admin: ClusterConfig | None) -> None:
        if not self.is_empty():
            raise EngineError(
                f"embedded store {self.path} holds documents; restore into an empty one"
            )
        with engine_errors(), contextlib.closing(sqlite3.connect(source / detail["file"])) as copy:
            copy.backup(self._store.connection())
        self._store.forget_snapshots()  # the cached ones describe the file before the restore
        self._store.saved.drop_all()  # and so do the saved dense indexes
        with self._store.transaction(write=True) as conn:  # another store: its own saved ones
            conn.execute("DELETE FROM settings WHERE name = 'instance'")
        self.ensure_ready()  # a backup of an older schema is brought up to date

    def is_empty(self) -> bool:
        with self._store.transaction() as conn:
            return conn.execute("SELECT 1 FROM memories_all LIMIT 1").fetchone() is None

    # --- writes --------------------------------------------------------------------------------
    def write(self, docs: list[MemoryDoc]) -> None:
        encoded = [encode(doc, self.dims) for doc in docs]
        with self._store.transaction(write=True) as conn:
            store_rows(conn, encoded)

    def create(self, docs: list[MemoryDoc]) -> set[str]:
        encoded = [encode(doc, self.dims) for doc in docs]
        with self._store.transaction(write=True) as conn:
            existing = {
                row[0]
                for row in conn.execute(
                    "SELECT id FROM memories WHERE id IN (SELECT value FROM json_each(?))",
                    (json.dumps([doc.id for doc in docs]),),
                )
            }
            store_rows(conn, [e for e in encoded if e.columns["id"] not in existing])
        return existing

    def update(self, doc: MemoryDoc, mutate: Callable[[MemoryDoc], dict[str, Any]]) -> MemoryDoc:
        # Holding the write lock from the read on makes this exact: no retry, never a conflict.
        with self._store.transaction(write=True) as conn:
            row = conn.execute(
                "SELECT source, embedding FROM memories WHERE id = ? AND owner = ?",
                (doc.id, owner_key(doc.tenant_id, doc.user_id)),
            ).fetchone()
            if row is None:
                raise EngineError(f"memory {doc.id} is gone")
            current = decode(row[0], row[1])
            changes = mutate(current)
            if not changes:
                return current
            updated = dataclasses.replace(current, **changes)
            store_rows(conn, [encode(updated, self.dims)])
        return dataclasses.replace(updated, embedding=None)

    def sync(self) -> None:
        """Nothing to do: every write is visible once its transaction commits."""

    def delete(self, doc: MemoryDoc) -> bool:
        owner = owner_key(doc.tenant_id, doc.user_id)
        with self._store.transaction(write=True) as conn:
            row = conn.execute(
                "DELETE FROM memories WHERE id = ? AND owner = ? RETURNING seq, source",
                (doc.id, owner),
            ).fetchone()
            if row is None:  # an archived fact is forgotten from the archive
                return bool(archive.delete(conn, "id = ? AND owner = ?", (doc.id, owner)))
            source = json.loads(row[1])
            unindex_row(conn, row[0], owner, source)
            bump(conn, owner, removed=[row[0]])
            self._clear_contexts(conn, owner, [source])
        return True

    def _clear_contexts(
        self, conn: sqlite3.Connection, owner: str, deleted: list[dict[str, Any]]
    ) -> None:
        """Clear the lexical context of the owner's turns that hold a deleted turn's words
        (``MemoryDoc.context_ids``; a context comes from the same session)."""
        sessions = sorted(
            {
                str(s["session_id"])
                for s in deleted
                if s.get("memory_type") == "episodic" and s.get("session_id")
            }
        )
        if not sessions:
            return
        rows = conn.execute(
            "SELECT source, embedding FROM memories WHERE owner = ? AND memory_type = 'episodic'"
            " AND session_id IN (SELECT value FROM json_each(?)) AND EXISTS (SELECT 1 FROM"
            " json_each(source, '$.context_ids') WHERE value IN (SELECT value FROM json_each(?)))",
            (owner, json.dumps(sessions), json.dumps([s["id"] for s in deleted])),
        ).fetchall()
        cleared = [
            dataclasses.replace(decode(source, embedding), context=None, context_ids=[])
            for source, embedding in rows
        ]
        if cleared:
            store_rows(conn, [encode(doc, self.dims) for doc in cleared])

    def delete_ids(
        self, *, tenant_id: str, user_id: str, memory_type: MemoryType, ids: list[str]
    ) -> list[str]:
        require_personal(memory_type)
        where, params = user_where(tenant_id, user_id, memory_type, ids)
        owner = owner_key(tenant_id, user_id)
        with self._store.transaction(write=True) as conn:
            rows = conn.execute(
                f"DELETE FROM memories WHERE {where} RETURNING seq, id, source",  # noqa: S608
                params,
            ).fetchall()
            sources = [json.loads(source) for _, _, source in rows]
            for (seq, _, _), source in zip(rows, sources, strict=True):
                unindex_row(conn, seq, owner, source)
            if rows:
                bump(conn, owner, removed=[seq for seq, _, _ in rows])
                self._clear_contexts(conn, owner, sources)
            archived = archive.delete(conn, where, params)
        return sorted([row[1] for row in rows] + archived)

    def expunge_deleted(self, *, tenant_id: str, user_id: str | None) -> bool:
        """The whole file's deleted rows: their terms merged out of the full-text indexes and
        the WAL truncated (``Store.expunge``); the rows' own bytes were overwritten when they
        were deleted (``secure_delete``)."""
        return self._store.expunge()

    # --- reads ---------------------------------------------------------------------------------
    def get_many(self, scope: ReadScope, memory_ids: list[str]) -> list[MemoryDoc]:
        # Lists travel as one JSON parameter: no SQL built from values, no bound-variable limit.
        with self._store.transaction() as conn:
            rows = conn.execute(
                "SELECT id, source FROM memories_all"
                " WHERE id IN (SELECT value FROM json_each(?))"
                " AND tenant_id = ? AND owner IN (SELECT value FROM json_each(?))",
                (json.dumps(memory_ids), scope.tenant_id, json.dumps(scope_owners(scope))),
            ).fetchall()
        found = {row[0]: decode(row[1]) for row in rows}
        return [found[memory_id] for memory_id in memory_ids if memory_id in found]

    def vectors(self, scope: ReadScope, memory_ids: list[str]) -> dict[str, list[float]]:
        ids, units = self._units(scope, memory_ids)
        return {memory_id: unit.tolist() for memory_id, unit in zip(ids, units, strict=True)}

    def similarities(
        self, scope: ReadScope, memory_ids: list[str], vector: list[float]
    ) -> dict[str, float]:
        ids, units = self._units(scope, memory_ids)
        scores = units @ np.asarray(vector, dtype=np.float32)
        return {memory_id: float(score) for memory_id, score in zip(ids, scores, strict=True)}

    def _units(self, scope: ReadScope, memory_ids: list[str]) -> tuple[list[str], np.ndarray]:
        """The stored unit vectors of those of ``memory_ids`` inside ``scope`` (one row each)."""
        with self._store.transaction() as conn:
            rows = conn.execute(
                "SELECT id, unit FROM memories"
                " WHERE id IN (SELECT value FROM json_each(?)) AND unit IS NOT NULL"
                " AND tenant_id = ? AND owner IN (SELECT value FROM json_each(?))",
                (json.dumps(memory_ids), scope.tenant_id, json.dumps(scope_owners(scope))),
            ).fetchall()
        units = np.frombuffer(b"".join(row[1] for row in rows), dtype=np.float32)
        return [row[0] for row in rows], units.reshape(len(rows), self._store.dims)

    def recall_legs(self, scope: ReadScope, query: LegQuery) -> LegResults:
        return legs.recall_legs(self._store, scope, query)

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
        wanted = RecallFilter(memory_types=memory_types, include_catalog="catalog" in memory_types)
        owners = [owner for owner, _ in recall_owners(scope, wanted)]
        after = ("", "")
        if search_after is not None:
            after = (sortable(datetime.fromisoformat(search_after[0])), search_after[1])
        # Each table on its own (its index on (owner, created_at, id)), then merged: a query of
        # the memories_all view with this WHERE would scan both tables whole.
        tables = (
            ("memories", "memories_archive")
            if include_superseded or only_superseded
            else ("memories",)
        )
        rows: list[tuple[str, str, str]] = []
        with self._store.transaction() as conn:
            for table in tables:
                rows += conn.execute(
                    f"SELECT created_at, id, source FROM {table}"  # noqa: S608 - fixed names
                    " WHERE owner IN (SELECT value FROM json_each(?)) AND tenant_id = ?"
                    " AND memory_type IN (SELECT value FROM json_each(?))"
                    " AND (? OR superseded_by IS NULL) AND (NOT ? OR superseded_by IS NOT NULL)"
                    " AND created_at >= ? AND created_at <= ?"
                    " AND (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT ?",
                    (
                        json.dumps(owners),
                        scope.tenant_id,
                        json.dumps(memory_types),
                        include_superseded or only_superseded,
                        only_superseded,
                        sortable(created_from) if created_from else "",
                        sortable(created_to) if created_to else "~",  # "~" sorts after any date
                        *after,
                        limit,
                    ),
                ).fetchall()
        rows.sort()
        return [decode(source) for _, _, source in rows[: max(0, limit)]]

    def previous_turn(
        self, *, tenant_id: str, user_id: str, session_id: str, before: datetime
    ) -> MemoryDoc | None:
        with self._store.transaction() as conn:
            row = conn.execute(
                "SELECT source FROM memories INDEXED BY memories_owner_session"
                " WHERE owner = ? AND session_id = ?"
                " AND timestamp <= ? AND tenant_id = ? AND memory_type = 'episodic'"
                " ORDER BY timestamp DESC, seq DESC LIMIT 1",
                (owner_key(tenant_id, user_id), session_id, sortable(before), tenant_id),
            ).fetchone()
        return decode(row[0]) if row else None

    def session_neighbours(
        self,
        scope: ReadScope,
        turns: list[SessionTurn],
        *,
        depth: int,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> dict[str, Neighbours]:
        if scope.user_id is None or not turns or depth < 1:
            return {}
        owner = owner_key(scope.tenant_id, scope.user_id)
        # Bounds as one clause each, always bound: an absent bound is the widest text. The
        # session's index, named: without statistics SQLite may take (owner, timestamp) for
        # the range instead and read every turn of the owner in it.
        low, high = sortable(since) if since else "", sortable(until) if until else "\uffff"
        around = (
            "SELECT id FROM memories INDEXED BY memories_owner_session"
            " WHERE owner = ? AND session_id = ?"
            " AND memory_type = 'episodic' AND timestamp {op} ? AND timestamp >= ?"
            " AND timestamp <= ? ORDER BY timestamp {order}, seq {order} LIMIT ?"
        )
        earlier = around.format(op="<", order="DESC")
        later = around.format(op=">", order="ASC")
        found: dict[str, Neighbours] = {}
        with self._store.transaction() as conn:
            for turn in turns:
                bounds = (owner, turn.session_id, sortable(turn.timestamp), low, high, depth)
                found[turn.id] = Neighbours(
                    before=tuple(row[0] for row in conn.execute(earlier, bounds)),
                    after=tuple(row[0] for row in conn.execute(later, bounds)),
                )
        return found

    def newest_timestamp(self, scope: ReadScope) -> datetime | None:
        with self._store.transaction() as conn:
            (latest,) = conn.execute(
                "SELECT max(timestamp) FROM memories"
                " WHERE owner IN (SELECT value FROM json_each(?)) AND tenant_id = ?"
                " AND memory_type IN ('episodic', 'semantic')",
                (json.dumps(scope_owners(scope)), scope.tenant_id),
            ).fetchone()
        return datetime.fromisoformat(latest).replace(tzinfo=UTC) if latest else None

    def count(self, scope: ReadScope) -> dict[str, int]:
        counts: dict[str, int] = dict.fromkeys(MEMORY_TYPES, 0)
        with self._store.transaction() as conn:
            for table in ("memories", "memories_archive"):  # each by its owner index
                for kind, n in conn.execute(
                    f"SELECT memory_type, count(*) FROM {table}"  # noqa: S608 - fixed names
                    " WHERE owner IN (SELECT value FROM json_each(?)) AND tenant_id = ?"
                    " GROUP BY memory_type",
                    (json.dumps(scope_owners(scope)), scope.tenant_id),
                ):
                    counts[kind] += int(n)
        return counts

    def tenant_memory_totals(self, tenant_ids: list[str]) -> dict[str, int]:
        with self._store.transaction() as conn:
            rows = conn.execute(
                "SELECT tenant_id, count(*) FROM memories_all"
                " WHERE tenant_id IN (SELECT value FROM json_each(?)) AND memory_type != ?"
                " GROUP BY tenant_id",
                (json.dumps(tenant_ids), ENTITY),
            ).fetchall()
        return dict.fromkeys(tenant_ids, 0) | {tenant: int(n) for tenant, n in rows}

    def growth(self, tenant_id: str, *, bucket: GrowthBucket) -> list[GrowthPoint]:
        # created_at is sortable() text; 'weekday 0', '-6 days' moves any day to its Monday.
        start = {
            "week": "date(created_at, 'weekday 0', '-6 days')",
            "month": "strftime('%Y-%m-01', created_at)",
        }[bucket]
        with self._store.transaction() as conn:
            rows = conn.execute(
                f"SELECT {start} AS start, memory_type, count(*) FROM memories_all"  # noqa: S608
                " WHERE tenant_id = ? GROUP BY start, memory_type ORDER BY start, memory_type",
                (tenant_id,),
            ).fetchall()
        return [
            GrowthPoint(
                start=datetime.fromisoformat(day).replace(tzinfo=UTC),
                memory_type=kind,
                count=int(n),
            )
            for day, kind, n in rows
        ]

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
        where, params = user_where(tenant_id, user_id, memory_type, among)
        ids: list[str] = []
        with self._store.transaction() as conn:
            for table in ("memories", "memories_archive"):  # each by its own index, merged
                ids += [
                    row[0]
                    for row in conn.execute(
                        f"SELECT id FROM {table} WHERE {where} ORDER BY id LIMIT ?",  # noqa: S608 - fixed text
                        (*params, max(0, limit)),
                    )
                ]
        return sorted(ids)[: max(0, limit)]

    def count_ids(
        self,
        *,
        tenant_id: str,
        user_id: str,
        memory_type: MemoryType,
        among: list[str] | None = None,
    ) -> int:
        require_personal(memory_type)
        where, params = user_where(tenant_id, user_id, memory_type, among)
        with self._store.transaction() as conn:
            return sum(
                int(
                    conn.execute(
                        f"SELECT count(*) FROM {table} WHERE {where}",  # noqa: S608 - fixed text
                        params,
                    ).fetchone()[0]
                )
                for table in ("memories", "memories_archive")
            )

    # --- the archive (``archive``: a table outside the recall snapshots) -------------------------
    def archive_superseded(
        self, *, tenant_id: str, user_id: str, before: datetime, limit: int = 500
    ) -> list[str]:
        with self._store.transaction(write=True) as conn:
            return archive.move(
                conn, tenant_id=tenant_id, user_id=user_id, before=before, limit=limit
            )

    def archive_expire(
        self, *, tenant_id: str, user_id: str, before: datetime, limit: int = 500
    ) -> list[str]:
        with self._store.transaction(write=True) as conn:
            return archive.expire(
                conn, tenant_id=tenant_id, user_id=user_id, before=before, limit=limit
            )

    def archive_count(self, *, tenant_id: str, user_id: str, among: list[str] | None = None) -> int:
        with self._store.transaction() as conn:
            return archive.count(conn, tenant_id=tenant_id, user_id=user_id, among=among)
