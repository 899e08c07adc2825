"""The embedded store's SQLite side: the schema, one connection per thread and process, short
transactions, encoding documents into rows, and the per-owner snapshots (``snapshots``).

``memories`` holds one row per document: the JSON source, the embedding exactly as written
(float64) and a float32 unit vector for the dense leg. ``memories_fts`` is a contentless FTS5
index over the text fields plus an ``owner`` token, so a MATCH never leaves the caller's scope.
``owners`` counts the writes per owner (a tenant's user, or its catalog).

A turn's lexical context (``MemoryDoc.context``) has an FTS5 table of its own,
``memories_context_fts`` (rows only for documents with a context): BM25 in FTS5 normalises by
the length of the whole row, so a context column in ``memories_fts`` would make every turn's
own words score lower; two tables keep per-field statistics, as Elasticsearch does.

The schema is versioned (``settings.schema``, ``SCHEMA_VERSION``); ``migrate`` brings an older
store's file up to date in the same transaction as ``ensure_ready``. Version 2 added a turn's
``session_id`` column (backfilled from the sources, indexed: the live write path reads a
session's newest turn) and the context table (empty: no version 1 document has a context).
Version 3 added ``project`` (``MemoryDoc.project``; backfilled from ``metadata.project``, where
agents' writes kept it before), which the snapshots filter recall on.

An owner's dense index is saved beside the file and loaded by a process that has none
(``saved``); any delete of an owner's rows drops its saved index (``bump``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import sqlite3
import threading
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from memory.engine.base import EngineError
from memory.engine.embedded import ann, snapshots
from memory.engine.embedded.ann import DenseIndex
from memory.engine.embedded.saved import SavedIndexes
from memory.engine.embedded.scopes import owner_key
from memory.engine.embedded.snapshots import Snapshot, SnapshotCache, Vector, sortable
from memory.engine.types import MemoryDoc

BUSY_TIMEOUT_S = 5.0
BUILD_CHUNK = 20_000  # rows read at a time while an owner's dense index is built
CACHE_BYTES = 256 * 2**20
PURGES_KEPT = 1000  # deletes remembered per owner (``purges``)
# The full-text indexes ``expunge`` merges, and the pages each of its transactions may write.
FTS_TABLES = ("memories_fts", "memories_context_fts", "memories_archive_fts")
MERGE_PAGES = 200
SCHEMA_VERSION = 3
CONTEXT_TABLE = """CREATE VIRTUAL TABLE IF NOT EXISTS memories_context_fts USING fts5(
        owner, context, content='', tokenize='porter unicode61'
    )"""

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS memories (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,  -- the FTS rowid: stable, and new rows sort last
        id TEXT NOT NULL UNIQUE,
        owner TEXT NOT NULL,                    -- owner_key(tenant_id, user_id)
        tenant_id TEXT NOT NULL,
        user_id TEXT,                           -- NULL: the tenant catalog
        memory_type TEXT NOT NULL,
        created_at TEXT NOT NULL,               -- snapshots.sortable(): UTC, sorts as text
        timestamp TEXT NOT NULL,
        superseded_by TEXT,
        decay_at REAL,                          -- epoch seconds the decay reads; NULL: exempt
        use_count INTEGER NOT NULL,
        rev INTEGER NOT NULL,                   -- owners.rev of the write that stored the row
        session_id TEXT,                        -- a turn's session (schema 2; added last there)
        project TEXT,                           -- MemoryDoc.project (schema 3; added last there)
        unit BLOB,                              -- float32 unit vector, before the wide columns
        source TEXT NOT NULL,                   -- MemoryDoc.to_source() minus the embedding
        embedding BLOB                          -- float64, exactly as written
    )""",
    "CREATE INDEX IF NOT EXISTS memories_owner_type ON memories (owner, memory_type)",
    "CREATE INDEX IF NOT EXISTS memories_owner_created ON memories (owner, created_at, id)",
    "CREATE INDEX IF NOT EXISTS memories_owner_rev ON memories (owner, rev)",
    # The owner's newest memory without a pass over its rows (recall's time anchor reads it:
    # ``newest_timestamp``). Not (owner, memory_type, timestamp): SQLite would then read a
    # session's neighbours through it instead of memories_owner_session.
    "CREATE INDEX IF NOT EXISTS memories_owner_time ON memories (owner, timestamp)",
    """CREATE TABLE IF NOT EXISTS owners (
        owner TEXT PRIMARY KEY, rev INTEGER NOT NULL, purged INTEGER NOT NULL
    )""",
    # What each delete took from its owner (``bump``): a cached snapshot or a dense index that
    # is a few deletes behind drops those rows instead of reading every row again. Seqs only;
    # the newest ``PURGES_KEPT`` per owner (one further behind reads every row, as before).
    """CREATE TABLE IF NOT EXISTS purges (
        owner TEXT NOT NULL, purged INTEGER NOT NULL, seqs TEXT NOT NULL,
        PRIMARY KEY (owner, purged)
    ) WITHOUT ROWID""",
    "CREATE TABLE IF NOT EXISTS settings (name TEXT PRIMARY KEY, value INTEGER NOT NULL)",
    """CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
        owner, text, name, description, trigger_text, content='', tokenize='porter unicode61'
    )""",
    CONTEXT_TABLE,
)
# After ``migrate``: the column it indexes may be new.
INDEXES = (
    "CREATE INDEX IF NOT EXISTS memories_owner_session"
    " ON memories (owner, session_id, timestamp) WHERE session_id IS NOT NULL",
)
INSERT = """
    INSERT INTO memories (id, owner, tenant_id, user_id, memory_type, created_at, timestamp,
        superseded_by, decay_at, use_count, rev, unit, source, embedding, session_id, project)
    VALUES (:id, :owner, :tenant_id, :user_id, :memory_type, :created_at, :timestamp,
        :superseded_by, :decay_at, :use_count, :rev, :unit, :source, :embedding, :session_id,
        :project)
    RETURNING seq
"""
UPDATE = """
    UPDATE memories SET (id, owner, tenant_id, user_id, memory_type, created_at, timestamp,
        superseded_by, decay_at, use_count, rev, unit, source, embedding, session_id, project)
    = (:id, :owner, :tenant_id, :user_id, :memory_type, :created_at, :timestamp,
        :superseded_by, :decay_at, :use_count, :rev, :unit, :source, :embedding, :session_id,
        :project)
    WHERE seq = :seq
"""


class Encoded(NamedTuple):
    columns: dict[str, Any]
    source: dict[str, Any]


class _ThreadConnection(threading.local):
    connection: sqlite3.Connection | None = None
    pid: int = 0


class Store:
    """The SQLite file at ``path`` with its connections and the process's snapshot cache."""

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
        self._local = _ThreadConnection()
        self._cache_bytes = cache_bytes
        self._cache = SnapshotCache(cache_bytes)
        self._ann_min_rows = ann_min_rows
        self._indexes: dict[str, DenseIndex] = {}  # owners past ann_min_rows; never evicted
        self._build_lock = threading.Lock()
        self.saved = SavedIndexes(self.path, dims)
        # A term's documents and the store's rows when they were counted (legs._bounded_terms).
        self.term_frequencies: dict[str, tuple[int, int]] = {}

    def connection(self) -> sqlite3.Connection:
        local = self._local
        # A connection must never cross a fork (a pre-forking server may import us first).
        if local.connection is None or local.pid != os.getpid():
            local.connection = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None
            )
            local.connection.execute("PRAGMA synchronous = NORMAL")  # durable enough with WAL
            # A deleted row's bytes are overwritten, not left in a free page: a forgotten
            # memory's text and vectors leave the file (the WAL: after ``expunge``). Some
            # SQLite builds default to it (Debian's does), others do not.
            local.connection.execute("PRAGMA secure_delete = ON")
            local.connection.create_function("saved_index_drop", 1, self.saved.drop)
            local.pid = os.getpid()
        return local.connection

    @contextmanager
    def transaction(self, *, write: bool = False) -> Iterator[sqlite3.Connection]:
        """One transaction. ``write`` takes the write lock up front: a read-modify-write that
        had to upgrade its lock would get "database is locked" instead of waiting for it."""
        with engine_errors():
            conn = self.connection()
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    def expunge(self) -> bool:
        """Leave no trace of deleted rows in the file (after an erasure): every full-text
        index merged into one segment, in short write transactions that other writers
        interleave with (a contentless FTS5 delete writes the row's terms again, as a delete
        marker, until a merge drops both), then the WAL, which still holds page images from
        before the deletes, checkpointed and truncated. False when a reader kept the WAL from
        being truncated: try again later."""
        with engine_errors():
            conn = self.connection()
            for table in FTS_TABLES:
                while True:
                    before = conn.total_changes
                    with self.transaction(write=True):
                        conn.execute(
                            f"INSERT INTO {table} ({table}, rank) VALUES ('merge', ?)",  # noqa: S608
                            (-MERGE_PAGES,),
                        )
                    if conn.total_changes - before < 2:  # FTS5's sign of no work left
                        break
            (busy, _, _) = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        return bool(busy == 0)

    def forget_snapshots(self) -> None:
        """Drop every cached snapshot (after the file was replaced under them by a restore)."""
        self._cache = SnapshotCache(self._cache_bytes)
        self._indexes = {}

    def snapshot(
        self, conn: sqlite3.Connection, owner: str, tenant_id: str, keep: Collection[str] = ()
    ) -> Snapshot:
        """The owner's rows as this transaction sees them: the cached snapshot less the rows
        deleted since (``purges``) plus the rows written since, or reloaded whole when it is
        further behind than the deletes remembered (the vectors then only where the owner has
        no dense index: the index catches up on its own). ``keep``: the other owners of the
        same read, whose snapshots this one must not evict."""
        rev, purged = conn.execute(
            "SELECT rev, purged FROM owners WHERE owner = ?", (owner,)
        ).fetchone() or (0, 0)
        cached = self._cache.get(owner)
        read_all = False
        if cached is None:  # a new process, or evicted: the saved columns of a large owner
            cached = self.saved.load_snapshot(conn, owner, tenant_id, rev, purged)
            if cached is not None and cached.has_unit.sum() < self._ann_min_rows:
                cached = None  # saved under a larger index threshold: it needs its matrix
        if cached is not None and cached.purged < purged and cached.rev < rev:
            gone = removed_since(conn, owner, cached.purged, purged)
            cached = None if gone is None else cached.without(gone, purged=purged)
        if cached is not None and cached.rev == rev:
            fresh = cached
        elif cached is not None and cached.purged == purged and cached.rev < rev:
            matrix = cached.dense is None and len(cached.units) == len(cached.seqs)
            since = self._load(conn, owner, tenant_id, rev, purged, cached.rev, units=matrix)
            fresh = cached.merged(since)
        else:  # the small columns first: a large owner's vectors go to its index, never here
            fresh = self._load(conn, owner, tenant_id, rev, purged, 0, units=False)
            read_all = True
            if owner not in self._indexes and fresh.has_unit.sum() < self._ann_min_rows:
                fresh = dataclasses.replace(fresh, units=self._matrix(conn, owner, fresh))
        fresh = self._in_step(conn, owner, tenant_id, fresh, saved=not read_all)
        self._cache.put(owner, fresh, keep)
        return fresh

    def _matrix(self, conn: sqlite3.Connection, owner: str, snapshot: Snapshot) -> Vector:
        """The float32 matrix of a small owner's snapshot (zeros where a row has none)."""
        seqs, units = self._unpack(
            conn.execute(
                "SELECT seq, unit FROM memories WHERE owner = ? AND rev <= ?"
                " AND unit IS NOT NULL ORDER BY seq",
                (owner, snapshot.rev),
            ).fetchall()
        )
        matrix = np.zeros((len(snapshot.seqs), self.dims), dtype=np.float32)
        pos = snapshot.positions(seqs)
        matrix[pos[pos >= 0]] = units[pos >= 0]
        return matrix

    # --- the dense index: the one place it is kept in step with the rows ------------------------
    def _in_step(
        self,
        conn: sqlite3.Connection,
        owner: str,
        tenant_id: str,
        snapshot: Snapshot,
        *,
        saved: bool = True,
    ) -> Snapshot:
        """``snapshot`` with the owner's dense index brought up to its revision: built (or
        loaded from its saved file) once the owner holds ``ann_min_rows`` vectors, then fed
        every row written since (a write, a usage bump, an update) and cleared of every row
        gone (a forget, an erasure); saved again when ``SavedIndexes.due``, its snapshot's
        small columns with it, and those also when they had to be read from every row
        (``saved`` False; a large owner's only: what is left after an erasure is not)."""
        index = self._indexes.get(owner)
        if index is None:
            if int(snapshot.has_unit.sum()) < self._ann_min_rows:
                return snapshot
            index = self._build(conn, owner, tenant_id, snapshot)
        with index.lock:
            if snapshot.rev > index.rev:
                self._catch_up(conn, owner, tenant_id, index, snapshot)
            due = self.saved.due(index, self._ann_min_rows)
            if due:
                self.saved.save(conn, owner, tenant_id, index)
        if snapshot.dense is not index or len(snapshot.units):
            snapshot = dataclasses.replace(
                snapshot, units=snapshot.units[:0], dense=index, room=None
            )
        if (due or not saved) and snapshot.has_unit.sum() >= self._ann_min_rows:
            self.saved.save_snapshot(conn, owner, tenant_id, snapshot)
        return snapshot

    def _build(
        self, conn: sqlite3.Connection, owner: str, tenant_id: str, snapshot: Snapshot
    ) -> DenseIndex:
        """The owner's saved index, or else a new one trained on a sample of its vectors."""
        with self._build_lock:
            index = self._indexes.get(owner)
            if index is None:
                index = self.saved.load(conn, owner, tenant_id, snapshot.rev, snapshot.purged)
                if index is None:
                    present = snapshot.seqs[snapshot.has_unit]
                    picks = np.linspace(0, len(present) - 1, ann.sample_size(len(present)))
                    sample = self._units(conn, present[np.unique(picks.astype(np.intp))])[1]
                    index = DenseIndex.trained(self.dims, sample)
                with index.lock:
                    self._catch_up(conn, owner, tenant_id, index, snapshot)
                self._indexes[owner] = index
        return index

    def _catch_up(
        self,
        conn: sqlite3.Connection,
        owner: str,
        tenant_id: str,
        index: DenseIndex,
        snapshot: Snapshot,
    ) -> None:
        """Bring ``index`` (its lock held) from its revision to ``snapshot``'s."""
        if index.purged != snapshot.purged and len(index):
            gone = removed_since(conn, owner, index.purged, snapshot.purged)
            if gone is None:  # too far behind: whatever the snapshot no longer has
                gone = np.setdiff1d(index.seqs(), snapshot.seqs[snapshot.has_unit])
            index.remove(gone)
        if index.rev == 0:  # the first fill: every row, by seq (the primary key), in chunks
            query = (
                "SELECT seq, unit FROM memories WHERE seq > ? AND owner = ? AND tenant_id = ?"
                " AND rev <= ? ORDER BY seq LIMIT ?"
            )
            after = 0
            while rows := conn.execute(
                query, (after, owner, tenant_id, snapshot.rev, BUILD_CHUNK)
            ).fetchall():
                self._index_rows(index, rows)
                after = rows[-1][0]
        else:  # the rows written since (memories_owner_rev)
            rows = conn.execute(
                "SELECT seq, unit FROM memories WHERE owner = ? AND tenant_id = ? AND rev > ?"
                " AND rev <= ?",
                (owner, tenant_id, index.rev, snapshot.rev),
            ).fetchall()
            self._index_rows(index, rows)
        index.rev, index.purged = snapshot.rev, snapshot.purged

    def _index_rows(self, index: DenseIndex, rows: list[Any]) -> None:
        index.remove(np.array([seq for seq, unit in rows if unit is None], dtype=np.int64))
        seqs, units = self._unpack([row for row in rows if row[1] is not None])
        index.add(seqs, units)

    def _units(
        self, conn: sqlite3.Connection, seqs: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.int64], Vector]:
        """The stored float32 unit vectors of ``seqs`` (those that have one)."""
        rows = conn.execute(
            "SELECT seq, unit FROM memories WHERE seq IN (SELECT value FROM json_each(?))"
            " AND unit IS NOT NULL ORDER BY seq",
            (json.dumps(seqs.tolist()),),
        ).fetchall()
        return self._unpack(rows)

    def _unpack(self, rows: list[Any]) -> tuple[npt.NDArray[np.int64], Vector]:
        seqs = np.array([seq for seq, _ in rows], dtype=np.int64)
        packed = b"".join(unit for _, unit in rows)
        return seqs, np.frombuffer(packed, dtype=np.float32).reshape(len(rows), self.dims)

    def _load(
        self,
        conn: sqlite3.Connection,
        owner: str,
        tenant_id: str,
        rev: int,
        purged: int,
        since: int,
        *,
        units: bool = True,
    ) -> Snapshot:
        rows = conn.execute(
            "SELECT seq, memory_type, superseded_by IS NOT NULL, timestamp, decay_at, use_count,"
            " coalesce(project, ''), unit IS NOT NULL, CASE WHEN ? THEN unit END FROM memories"
            " WHERE owner = ? AND tenant_id = ? AND rev > ? ORDER BY seq",
            (units, owner, tenant_id, since),
        ).fetchall()
        return Snapshot.from_rows(rows, rev=rev, purged=purged, dims=self.dims, units=units)


@contextmanager
def engine_errors() -> Iterator[None]:
    try:
        yield
    except sqlite3.Error as exc:
        raise EngineError(f"embedded store: {exc}") from exc


def store_rows(conn: sqlite3.Connection, docs: list[Encoded]) -> None:
    revs = {owner: bump(conn, owner) for owner in {doc.columns["owner"] for doc in docs}}
    for doc in docs:
        columns = doc.columns | {"rev": revs[doc.columns["owner"]]}
        old = conn.execute(
            "SELECT seq, owner, source FROM memories WHERE id = ?", (columns["id"],)
        ).fetchone()
        owner = columns["owner"]
        if old is None:
            (seq,) = conn.execute(INSERT, columns).fetchone()
            index_row(conn, seq, owner, doc.source)
            continue
        seq, old_owner, old_source = old
        conn.execute(UPDATE, columns | {"seq": seq})
        old = json.loads(old_source)
        if fts_fields(old_owner, old) != fts_fields(owner, doc.source):
            fts_delete(conn, seq, fts_fields(old_owner, old))
            fts_insert(conn, seq, fts_fields(owner, doc.source))
        if context_fields(old_owner, old) != context_fields(owner, doc.source):
            context_delete(conn, seq, context_fields(old_owner, old))
            context_insert(conn, seq, context_fields(owner, doc.source))
        if old_owner != columns["owner"]:
            bump(conn, old_owner, removed=[seq])


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the store's schema to ``SCHEMA_VERSION`` (inside the caller's write transaction,
    after ``SCHEMA``); the version it was at. A store from before versioning is version 1."""
    row = conn.execute("SELECT value FROM settings WHERE name = 'schema'").fetchone()
    columns = {r[1] for r in conn.execute("PRAGMA table_info(memories)")}
    version = int(row[0]) if row else (2 if "session_id" in columns else 1)
    if version < 2:
        if "session_id" not in columns:
            conn.execute("ALTER TABLE memories ADD COLUMN session_id TEXT")
        conn.execute(
            "UPDATE memories SET session_id = json_extract(source, '$.session_id')"
            " WHERE memory_type = 'episodic'"
        )
        conn.execute(CONTEXT_TABLE)  # SCHEMA made it already; nothing to fill
    if version < 3:
        migrate_project(conn, columns)
    for statement in INDEXES:
        conn.execute(statement)
    conn.execute(
        "INSERT INTO settings VALUES ('schema', ?) ON CONFLICT (name) DO UPDATE SET value ="
        " excluded.value",
        (SCHEMA_VERSION,),
    )
    return version


def migrate_project(conn: sqlite3.Connection, columns: set[str]) -> None:
    """Schema 3: the ``project`` column, filled (column and source) from the project that
    agents' writes kept in ``metadata.project`` before memories had a field of their own."""
    if "project" not in columns:
        conn.execute("ALTER TABLE memories ADD COLUMN project TEXT")
    conn.execute(
        "UPDATE memories SET project = json_extract(source, '$.metadata.project'),"
        " source = json_set(source, '$.project', json_extract(source, '$.metadata.project'))"
        " WHERE json_type(source, '$.metadata.project') = 'text'"
        " AND json_type(source, '$.project') IS NULL"
    )


def bump(conn: sqlite3.Connection, owner: str, *, removed: Collection[int] = ()) -> int:
    """Count a write to ``owner``; a delete (the ``removed`` seqs: rows taken out of the
    owner's) also counts as a purge: its seqs are kept in ``purges`` for the owner's cached
    snapshots and dense index to drop, and the owner's saved files are removed
    (``SavedIndexes.drop``)."""
    if removed:
        conn.execute("SELECT saved_index_drop(?)", (owner,))
    rev, purged = conn.execute(
        "INSERT INTO owners (owner, rev, purged) VALUES (?, 1, ?) ON CONFLICT (owner)"
        " DO UPDATE SET rev = rev + 1, purged = purged + excluded.purged RETURNING rev, purged",
        (owner, int(bool(removed))),
    ).fetchone()
    if removed:
        conn.execute(
            "INSERT INTO purges (owner, purged, seqs) VALUES (?, ?, ?)",
            (owner, purged, json.dumps(sorted(int(seq) for seq in removed))),
        )
        conn.execute(
            "DELETE FROM purges WHERE owner = ? AND purged <= ?", (owner, purged - PURGES_KEPT)
        )
    return int(rev)


def removed_since(
    conn: sqlite3.Connection, owner: str, since: int, purged: int
) -> npt.NDArray[np.int64] | None:
    """The seqs the owner's deletes after ``since`` up to ``purged`` took out, sorted; None
    when one of those deletes is no longer remembered (``PURGES_KEPT``, or a store from before
    ``purges``): the caller then reads what is left instead."""
    rows = conn.execute(
        "SELECT seqs FROM purges WHERE owner = ? AND purged > ? AND purged <= ?",
        (owner, since, purged),
    ).fetchall()
    if len(rows) != purged - since:
        return None
    seqs = [seq for (listed,) in rows for seq in json.loads(listed)]
    return np.unique(np.array(seqs, dtype=np.int64))


def index_row(conn: sqlite3.Connection, seq: int, owner: str, source: dict[str, Any]) -> None:
    """Index a new row's words (its text fields, and its lexical context if any)."""
    fts_insert(conn, seq, fts_fields(owner, source))
    context_insert(conn, seq, context_fields(owner, source))


def unindex_row(conn: sqlite3.Connection, seq: int, owner: str, source: dict[str, Any]) -> None:
    """Take a deleted row's words out of both indices (exactly what ``index_row`` put in)."""
    fts_delete(conn, seq, fts_fields(owner, source))
    context_delete(conn, seq, context_fields(owner, source))


def fts_insert(conn: sqlite3.Connection, seq: int, fields: tuple[str | None, ...]) -> None:
    conn.execute(
        "INSERT INTO memories_fts (rowid, owner, text, name, description, trigger_text)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (seq, *fields),
    )


def fts_delete(conn: sqlite3.Connection, seq: int, fields: tuple[str | None, ...]) -> None:
    # A contentless index forgets a row only when given exactly the values it indexed.
    conn.execute(
        "INSERT INTO memories_fts (memories_fts, rowid, owner, text, name, description,"
        " trigger_text) VALUES ('delete', ?, ?, ?, ?, ?, ?)",
        (seq, *fields),
    )


def fts_fields(owner: str, source: dict[str, Any]) -> tuple[str | None, ...]:
    fields = (source["text"], source.get("name"), source.get("description"), source.get("trigger"))
    return (owner, *fields)


def context_fields(owner: str, source: dict[str, Any]) -> tuple[str, str] | None:
    """The row of ``memories_context_fts`` for a document, or None: it has no context."""
    context = source.get("context")
    return (owner, context) if context else None


def context_insert(conn: sqlite3.Connection, seq: int, fields: tuple[str, str] | None) -> None:
    if fields is not None:
        conn.execute(
            "INSERT INTO memories_context_fts (rowid, owner, context) VALUES (?, ?, ?)",
            (seq, *fields),
        )


def context_delete(conn: sqlite3.Connection, seq: int, fields: tuple[str, str] | None) -> None:
    # Only a row that was indexed: a 'delete' of values never inserted would corrupt the stats.
    if fields is not None:
        conn.execute(
            "INSERT INTO memories_context_fts (memories_context_fts, rowid, owner, context)"
            " VALUES ('delete', ?, ?, ?)",
            (seq, *fields),
        )


def new_instance() -> int:
    """A store's ``instance``: which store its saved dense indexes were saved from."""
    return secrets.randbits(62)


def encode(doc: MemoryDoc, dims: int) -> Encoded:
    source = doc.to_source()
    source.pop("embedding", None)
    owner = owner_key(doc.tenant_id, doc.user_id)
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
        "unit": unit_vector(doc.embedding, dims).tobytes() if has_vector else None,
        "source": json.dumps(source, ensure_ascii=False),
        "embedding": np.asarray(doc.embedding, np.float64).tobytes() if has_vector else None,
        "session_id": doc.session_id if doc.memory_type == "episodic" else None,
        "project": doc.project,
    }
    return Encoded(columns=columns, source=source)


def decode(source: str, embedding: bytes | None = None) -> MemoryDoc:
    data = json.loads(source)
    if embedding is not None:
        data["embedding"] = np.frombuffer(embedding, dtype=np.float64).tolist()
    return MemoryDoc.from_source(data)


def unit_vector(values: list[float] | None, dims: int) -> Vector:
    vector = np.asarray(values, dtype=np.float64)
    norm = float(np.linalg.norm(vector)) if vector.shape == (dims,) else 0.0
    if not (np.isfinite(norm) and norm > 0.0):  # Elasticsearch refuses these for cosine too
        raise EngineError(f"an embedding needs {dims} finite values, not all zero")
    return (vector / norm).astype(np.float32)
