"""The embedded backend: the memory contract in-process, over its own SQLite file.

``memories`` holds one row per document: the JSON source, the embedding exactly as written
(float64) and a float32 unit vector for the dense leg. ``memories_fts`` is a contentless FTS5
index over the text fields plus an ``owner`` token, so a MATCH never leaves the caller's scope.
``owners`` counts the writes per owner (a tenant's user, or its catalog): each process keeps
an owner's vectors and ranking columns in numpy (``embedded_snapshots``) and reads back only the
rows written since, because a turn writes and then recalls, and reloading 10k rows each time
would cost more than the recall itself.

Several web workers may write at once: WAL, a busy timeout, one connection per thread and
process, short ``BEGIN IMMEDIATE`` write transactions, and each read inside one snapshot.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from memory.engine.embedded import snapshots
from memory.engine.base import EngineError, MemoryBackend, signal_multiplier
from memory.engine.embedded.snapshots import Candidate, Snapshot, SnapshotCache, Vector, sortable
from memory.engine.types import (
    MEMORY_TYPES,
    PERSONAL_TYPES,
    GrowthBucket,
    GrowthPoint,
    LegHit,
    LegQuery,
    LegResults,
    MemoryDoc,
    MemoryType,
    ReadScope,
    RecallFilter,
)
from memory.query import lexical_terms

BUSY_TIMEOUT_S = 5.0
CACHE_BYTES = 256 * 2**20

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS memories (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,  -- the FTS rowid: stable, and new rows sort last
        id TEXT NOT NULL UNIQUE,
        owner TEXT NOT NULL,                    -- _owner_key(tenant_id, user_id)
        tenant_id TEXT NOT NULL,
        user_id TEXT,                           -- NULL: the tenant catalog
        memory_type TEXT NOT NULL,
        created_at TEXT NOT NULL,               -- snapshots.sortable(): UTC, sorts as text
        timestamp TEXT NOT NULL,
        superseded_by TEXT,
        decay_at REAL,                          -- epoch seconds the decay reads; NULL: exempt
        use_count INTEGER NOT NULL,
        rev INTEGER NOT NULL,                   -- owners.rev of the write that stored the row
        unit BLOB,                              -- float32 unit vector, before the wide columns
        source TEXT NOT NULL,                   -- MemoryDoc.to_source() minus the embedding
        embedding BLOB                          -- float64, exactly as written
    )""",
    "CREATE INDEX IF NOT EXISTS memories_owner_type ON memories (owner, memory_type)",
    "CREATE INDEX IF NOT EXISTS memories_owner_created ON memories (owner, created_at, id)",
    "CREATE INDEX IF NOT EXISTS memories_owner_rev ON memories (owner, rev)",
    """CREATE TABLE IF NOT EXISTS owners (
        owner TEXT PRIMARY KEY, rev INTEGER NOT NULL, purged INTEGER NOT NULL
    )""",
    "CREATE TABLE IF NOT EXISTS settings (name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
    """CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
        owner, text, name, description, trigger_text, content='', tokenize='porter unicode61'
    )""",
)
INSERT = """
    INSERT INTO memories (id, owner, tenant_id, user_id, memory_type, created_at, timestamp,
        superseded_by, decay_at, use_count, rev, unit, source, embedding)
    VALUES (:id, :owner, :tenant_id, :user_id, :memory_type, :created_at, :timestamp,
        :superseded_by, :decay_at, :use_count, :rev, :unit, :source, :embedding)
    RETURNING seq
"""
UPDATE = """
    UPDATE memories SET (id, owner, tenant_id, user_id, memory_type, created_at, timestamp,
        superseded_by, decay_at, use_count, rev, unit, source, embedding)
    = (:id, :owner, :tenant_id, :user_id, :memory_type, :created_at, :timestamp,
        :superseded_by, :decay_at, :use_count, :rev, :unit, :source, :embedding)
    WHERE seq = :seq
"""


class _Encoded(NamedTuple):
    columns: dict[str, Any]
    fts: tuple[str | None, ...]


class _ThreadConnection(threading.local):
    connection: sqlite3.Connection | None = None
    pid: int = 0


class EmbeddedBackend(MemoryBackend):
    """The contract over a SQLite file at ``path`` (FTS5 for BM25, numpy for cosine)."""

    name = "embedded"

    def __init__(self, *, path: Path, dims: int, cache_bytes: int = CACHE_BYTES) -> None:
        self.path = Path(path)
        self.dims = dims
        self._local = _ThreadConnection()
        self._cache = SnapshotCache(cache_bytes)

    def ensure_ready(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with _engine_errors():
            (mode,) = self._connection().execute("PRAGMA journal_mode = WAL").fetchone()
        if mode != "wal":  # e.g. a network file system: concurrent writers would not be safe
            raise EngineError(f"embedded store {self.path}: WAL unavailable (mode {mode})")
        with self._transaction(write=True) as conn:
            for statement in SCHEMA:
                conn.execute(statement)
            conn.execute("INSERT OR IGNORE INTO settings VALUES ('dims', ?)", (self.dims,))
            (dims,) = conn.execute("SELECT value FROM settings WHERE name = 'dims'").fetchone()
        if dims != self.dims:  # another embedding model wrote these vectors
            raise EngineError(f"embedded store {self.path} holds {dims}-d vectors, not {self.dims}")

    def write(self, docs: list[MemoryDoc]) -> None:
        encoded = [_encode(doc, self.dims) for doc in docs]
        with self._transaction(write=True) as conn:
            _store(conn, encoded)

    def get(self, scope: ReadScope, memory_id: str) -> MemoryDoc | None:
        found = self.get_many(scope, [memory_id])
        return found[0] if found else None

    def get_many(
        self, scope: ReadScope, memory_ids: list[str], *, vectors: bool = True
    ) -> list[MemoryDoc]:
        # Lists travel as one JSON parameter: no SQL built from values, no bound-variable limit.
        with self._transaction() as conn:
            rows = conn.execute(
                "SELECT id, source, embedding FROM memories"
                " WHERE id IN (SELECT value FROM json_each(?))"
                " AND tenant_id = ? AND owner IN (SELECT value FROM json_each(?))",
                (json.dumps(memory_ids), scope.tenant_id, json.dumps(_scope_owners(scope))),
            ).fetchall()
        found = {row[0]: _decode(row[1], row[2]) for row in rows}
        return [found[memory_id] for memory_id in memory_ids if memory_id in found]

    def update(self, doc: MemoryDoc, mutate: Callable[[MemoryDoc], dict[str, Any]]) -> MemoryDoc:
        # Holding the write lock from the read on makes this exact: no retry, never a Conflict.
        with self._transaction(write=True) as conn:
            row = conn.execute(
                "SELECT source, embedding FROM memories WHERE id = ? AND owner = ?",
                (doc.id, _owner_key(doc.tenant_id, doc.user_id)),
            ).fetchone()
            if row is None:
                raise EngineError(f"memory {doc.id} is gone")
            current = _decode(row[0], row[1])
            changes = mutate(current)
            if not changes:
                return current
            updated = dataclasses.replace(current, **changes)
            _store(conn, [_encode(updated, self.dims)])
        return updated

    def delete(self, doc: MemoryDoc) -> bool:
        owner = _owner_key(doc.tenant_id, doc.user_id)
        with self._transaction(write=True) as conn:
            row = conn.execute(
                "DELETE FROM memories WHERE id = ? AND owner = ? RETURNING seq, source",
                (doc.id, owner),
            ).fetchone()
            if row is None:
                return False
            _fts_delete(conn, row[0], _fts_fields(owner, json.loads(row[1])))
            _bump(conn, owner, purged=True)
        return True

    def recall_legs(self, scope: ReadScope, query: LegQuery) -> LegResults:
        started = time.perf_counter()
        owners = _recall_owners(scope, query.filter)
        vector = None
        if query.dense and query.vector is not None:
            vector = _unit_vector(query.vector, self.dims)
        with self._transaction() as conn:
            masked = []
            for owner, kinds in owners:
                snapshot = self._snapshot(conn, owner, scope.tenant_id)
                masked.append((snapshot, snapshots.recall_mask(snapshot, kinds, query.filter)))
            lexical: list[Candidate] = []
            if query.lexical:
                lexical = _lexical(conn, [owner for owner, _ in owners], masked, query)
            dense: list[Candidate] = []
            if vector is not None:
                for snapshot, mask in masked:
                    dense += snapshots.dense_candidates(snapshot, mask, vector, query)
            dense = _top(dense, query.size)
            docs = _docs_by_seq(conn, {candidate.seq for candidate in lexical + dense})
        return LegResults(
            lexical=_hits(lexical, docs, query),
            dense=_hits(dense, docs, query),
            took_ms=(time.perf_counter() - started) * 1000.0,
        )

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
        owners = [
            owner
            for owner, _ in _recall_owners(
                scope,
                RecallFilter(memory_types=memory_types, include_catalog="catalog" in memory_types),
            )
        ]
        after = ("", "")
        if search_after is not None:
            after = (sortable(datetime.fromisoformat(search_after[0])), search_after[1])
        with self._transaction() as conn:
            rows = conn.execute(
                "SELECT source, embedding FROM memories"
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
        return [_decode(source, embedding) for source, embedding in rows]

    def count(self, scope: ReadScope) -> dict[str, int]:
        with self._transaction() as conn:
            rows = conn.execute(
                "SELECT memory_type, count(*) FROM memories"
                " WHERE owner IN (SELECT value FROM json_each(?)) AND tenant_id = ?"
                " GROUP BY memory_type",
                (json.dumps(_scope_owners(scope)), scope.tenant_id),
            ).fetchall()
        return dict.fromkeys(MEMORY_TYPES, 0) | {kind: int(n) for kind, n in rows}

    def growth(self, tenant_id: str, *, bucket: GrowthBucket) -> list[GrowthPoint]:
        # created_at is sortable() text; 'weekday 0', '-6 days' moves any day to its Monday.
        start = {
            "week": "date(created_at, 'weekday 0', '-6 days')",
            "month": "strftime('%Y-%m-01', created_at)",
        }[bucket]
        with self._transaction() as conn:
            rows = conn.execute(
                f"SELECT {start} AS start, memory_type, count(*) FROM memories"  # noqa: S608
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

    # --- erasure ------------------------------------------------------------------------------
    def erasure_kinds(self) -> tuple[str, ...]:
        return PERSONAL_TYPES  # no archive table here

    def erasure_find(
        self,
        *,
        tenant_id: str,
        user_id: str,
        kind: str,
        ids: list[str] | None = None,
        limit: int = 500,
    ) -> list[str]:
        where, params = _erasure_where(tenant_id, user_id, kind, ids)
        with self._transaction() as conn:
            rows = conn.execute(
                f"SELECT id FROM memories WHERE {where} ORDER BY id LIMIT ?",  # noqa: S608 - fixed text
                (*params, max(0, limit)),
            ).fetchall()
        return [row[0] for row in rows]

    def erasure_delete(
        self, *, tenant_id: str, user_id: str, kind: str, ids: list[str]
    ) -> list[str]:
        where, params = _erasure_where(tenant_id, user_id, kind, ids)
        owner = _owner_key(tenant_id, user_id)
        with self._transaction(write=True) as conn:
            rows = conn.execute(
                f"DELETE FROM memories WHERE {where} RETURNING seq, id, source",  # noqa: S608
                params,
            ).fetchall()
            for seq, _, source in rows:
                _fts_delete(conn, seq, _fts_fields(owner, json.loads(source)))
            if rows:
                _bump(conn, owner, purged=True)
        return sorted(row[1] for row in rows)

    def erasure_count(
        self, *, tenant_id: str, user_id: str, kind: str, ids: list[str] | None = None
    ) -> int:
        where, params = _erasure_where(tenant_id, user_id, kind, ids)
        with self._transaction() as conn:
            (n,) = conn.execute(
                f"SELECT count(*) FROM memories WHERE {where}",  # noqa: S608 - fixed text
                params,
            ).fetchone()
        return int(n)

    def _connection(self) -> sqlite3.Connection:
        local = self._local
        # A connection must never cross a fork (a pre-forking server may import us first).
        if local.connection is None or local.pid != os.getpid():
            local.connection = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None
            )
            local.connection.execute("PRAGMA synchronous = NORMAL")  # durable enough with WAL
            local.pid = os.getpid()
        return local.connection

    @contextmanager
    def _transaction(self, *, write: bool = False) -> Iterator[sqlite3.Connection]:
        """One transaction. ``write`` takes the write lock up front: a read-modify-write that
        had to upgrade its lock would get "database is locked" instead of waiting for it."""
        with _engine_errors():
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    def _snapshot(self, conn: sqlite3.Connection, owner: str, tenant_id: str) -> Snapshot:
        """The owner's rows as this transaction sees them: the cached snapshot plus the rows
        written since, or reloaded whole after a delete."""
        rev, purged = conn.execute(
            "SELECT rev, purged FROM owners WHERE owner = ?", (owner,)
        ).fetchone() or (0, 0)
        cached = self._cache.get(owner)
        if cached is not None and cached.rev == rev:
            fresh = cached
        elif cached is not None and cached.purged == purged and cached.rev < rev:
            fresh = cached.merged(self._load(conn, owner, tenant_id, rev, purged, cached.rev))
        else:
            fresh = self._load(conn, owner, tenant_id, rev, purged, 0)
        self._cache.put(owner, fresh)
        return fresh

    def _load(
        self,
        conn: sqlite3.Connection,
        owner: str,
        tenant_id: str,
        rev: int,
        purged: int,
        since: int,
    ) -> Snapshot:
        rows = conn.execute(
            "SELECT seq, memory_type, superseded_by IS NOT NULL, timestamp, decay_at, use_count,"
            " unit FROM memories WHERE owner = ? AND tenant_id = ? AND rev > ? ORDER BY seq",
            (owner, tenant_id, since),
        ).fetchall()
        return Snapshot.from_rows(rows, rev=rev, purged=purged, dims=self.dims)


@contextmanager
def _engine_errors() -> Iterator[None]:
    try:
        yield
    except sqlite3.Error as exc:
        raise EngineError(f"embedded store: {exc}") from exc


# --- writing ------------------------------------------------------------------------------------
def _store(conn: sqlite3.Connection, docs: list[_Encoded]) -> None:
    revs = {owner: _bump(conn, owner) for owner in {doc.columns["owner"] for doc in docs}}
    for doc in docs:
        columns = doc.columns | {"rev": revs[doc.columns["owner"]]}
        old = conn.execute(
            "SELECT seq, owner, source FROM memories WHERE id = ?", (columns["id"],)
        ).fetchone()
        if old is None:
            (seq,) = conn.execute(INSERT, columns).fetchone()
            _fts_insert(conn, seq, doc.fts)
            continue
        seq, old_owner, old_source = old
        conn.execute(UPDATE, columns | {"seq": seq})
        old_fts = _fts_fields(old_owner, json.loads(old_source))
        if old_fts != doc.fts:
            _fts_delete(conn, seq, old_fts)
            _fts_insert(conn, seq, doc.fts)
        if old_owner != columns["owner"]:
            _bump(conn, old_owner, purged=True)


def _bump(conn: sqlite3.Connection, owner: str, *, purged: bool = False) -> int:
    """Count a write to ``owner``; a delete also counts as a purge (snapshots reload whole)."""
    (rev,) = conn.execute(
        "INSERT INTO owners (owner, rev, purged) VALUES (?, 1, ?) ON CONFLICT (owner)"
        " DO UPDATE SET rev = rev + 1, purged = purged + excluded.purged RETURNING rev",
        (owner, int(purged)),
    ).fetchone()
    return int(rev)


def _fts_insert(conn: sqlite3.Connection, seq: int, fields: tuple[str | None, ...]) -> None:
    conn.execute(
        "INSERT INTO memories_fts (rowid, owner, text, name, description, trigger_text)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (seq, *fields),
    )


def _fts_delete(conn: sqlite3.Connection, seq: int, fields: tuple[str | None, ...]) -> None:
    # A contentless index forgets a row only when given exactly the values it indexed.
    conn.execute(
        "INSERT INTO memories_fts (memories_fts, rowid, owner, text, name, description,"
        " trigger_text) VALUES ('delete', ?, ?, ?, ?, ?, ?)",
        (seq, *fields),
    )


def _fts_fields(owner: str, source: dict[str, Any]) -> tuple[str | None, ...]:
    fields = (source["text"], source.get("name"), source.get("description"), source.get("trigger"))
    return (owner, *fields)


def _encode(doc: MemoryDoc, dims: int) -> _Encoded:
    source = doc.to_source()
    source.pop("embedding", None)
    owner = _owner_key(doc.tenant_id, doc.user_id)
    has_vector = doc.embedding is not None
    columns = {
        "id": doc.id,
        "owner": owner,
        "tenant_id": doc.tenant_id,
        "user_id": doc.user_id,
        "memory_type": doc.memory_type,
        "created_at": sortable(doc.created_at),
        "timestamp": sortable(doc.timestamp),
        "superseded_by": doc.superseded_by,
        "decay_at": snapshots.decay_anchor(doc),
        "use_count": doc.use_count,
        "unit": _unit_vector(doc.embedding, dims).tobytes() if has_vector else None,
        "source": json.dumps(source, ensure_ascii=False),
        "embedding": np.asarray(doc.embedding, np.float64).tobytes() if has_vector else None,
    }
    return _Encoded(columns=columns, fts=_fts_fields(owner, source))


def _decode(source: str, embedding: bytes | None) -> MemoryDoc:
    data = json.loads(source)
    if embedding is not None:
        data["embedding"] = np.frombuffer(embedding, dtype=np.float64).tolist()
    return MemoryDoc.from_source(data)


def _unit_vector(values: list[float] | None, dims: int) -> Vector:
    vector = np.asarray(values, dtype=np.float64)
    norm = float(np.linalg.norm(vector)) if vector.shape == (dims,) else 0.0
    if not (np.isfinite(norm) and norm > 0.0):  # Elasticsearch refuses these for cosine too
        raise EngineError(f"an embedding needs {dims} finite values, not all zero")
    return (vector / norm).astype(np.float32)


# --- scopes -------------------------------------------------------------------------------------
def _owner_key(tenant_id: str, user_id: str | None) -> str:
    """One indexable value per owner, all digits so that it is also one FTS token that no
    tokenizer or stemmer alters."""
    digest = hashlib.blake2b(repr((tenant_id, user_id)).encode(), digest_size=16).digest()
    return str(int.from_bytes(digest, "big"))


def _erasure_where(
    tenant_id: str, user_id: str, kind: str, ids: list[str] | None
) -> tuple[str, tuple[Any, ...]]:
    """The user's rows of one kind (among ``ids`` when given): fixed SQL, values as params."""
    if kind not in PERSONAL_TYPES:
        raise EngineError(f"No erasable index {kind!r}.")
    where = "owner = ? AND tenant_id = ? AND memory_type = ?"
    params: tuple[Any, ...] = (_owner_key(tenant_id, user_id), tenant_id, kind)
    if ids is not None:
        where += " AND id IN (SELECT value FROM json_each(?))"
        params += (json.dumps(ids),)
    return where, params


def _scope_owners(scope: ReadScope) -> list[str]:
    catalog = _owner_key(scope.tenant_id, None)
    if scope.user_id is None:
        return [catalog]
    return [_owner_key(scope.tenant_id, scope.user_id), catalog]


def _recall_owners(
    scope: ReadScope, wanted: RecallFilter
) -> list[tuple[str, tuple[MemoryType, ...]]]:
    """The owners a read searches, each with the memory types it may return there."""
    owners: list[tuple[str, tuple[MemoryType, ...]]] = []
    personal = tuple(kind for kind in wanted.memory_types if kind != "catalog")
    if scope.user_id is not None and personal:
        owners.append((_owner_key(scope.tenant_id, scope.user_id), personal))
    if wanted.include_catalog:
        owners.append((_owner_key(scope.tenant_id, None), ("catalog",)))
    return owners


# --- recall -------------------------------------------------------------------------------------
def _lexical(
    conn: sqlite3.Connection,
    owners: list[str],
    masked: list[tuple[Snapshot, snapshots.Mask]],
    query: LegQuery,
) -> list[Candidate]:
    expression = _match_expression(query.text, owners)
    if expression is None:
        return []
    # Field weights as the Elasticsearch backend's; the owner column only filters.
    found = conn.execute(
        "SELECT rowid, -bm25(memories_fts, 0, 1, 0.5, 0.3, 0.5) FROM memories_fts"
        " WHERE memories_fts MATCH ?",
        (expression,),
    ).fetchall()
    seqs = np.array([seq for seq, _ in found], dtype=np.int64)
    bm25 = np.array([score for _, score in found], dtype=np.float64)
    candidates: list[Candidate] = []
    for snapshot, mask in masked:
        candidates += snapshots.lexical_candidates(snapshot, mask, seqs, bm25, query)
    return _top(candidates, query.size)


def _match_expression(text: str, owners: list[str]) -> str | None:
    """An FTS5 query for any of the query's ``lexical_terms`` (each quoted, so user text is
    never FTS5 syntax) in the text fields of the owners' documents."""
    terms = lexical_terms(text)
    if not terms or not owners:
        return None
    return (
        f"owner : ({_any_of(owners)})"
        f" AND {{text name description trigger_text}} : ({_any_of(terms)})"
    )


def _any_of(tokens: list[str]) -> str:
    return " OR ".join('"' + token.replace('"', '""') + '"' for token in dict.fromkeys(tokens))


def _top(candidates: list[Candidate], size: int) -> list[Candidate]:
    return sorted(candidates, key=lambda candidate: -candidate.score)[:size]


def _docs_by_seq(conn: sqlite3.Connection, seqs: set[int]) -> dict[int, MemoryDoc]:
    rows = conn.execute(
        "SELECT seq, source, embedding FROM memories WHERE seq IN (SELECT value FROM json_each(?))",
        (json.dumps(sorted(seqs)),),
    ).fetchall()
    return {seq: _decode(source, embedding) for seq, source, embedding in rows}


def _hits(candidates: list[Candidate], docs: dict[int, MemoryDoc], query: LegQuery) -> list[LegHit]:
    """The leg's hits, scored with ``signal_multiplier`` itself."""
    scored = [
        (c.raw * signal_multiplier(docs[c.seq], query.ranking, query.now), docs[c.seq])
        for c in candidates
    ]
    scored.sort(key=lambda pair: -pair[0])
    return [
        LegHit(id=doc.id, score=score, rank=n, doc=doc, superseded_by=doc.superseded_by)
        for n, (score, doc) in enumerate(scored, 1)
    ]
