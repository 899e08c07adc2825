"""The embedded store's archive: superseded facts moved out of ``memories`` (and so out of the
recall snapshots and the live FTS index) into ``memories_archive``, with an FTS5 index of its
own (``memories_archive_fts``) for the reads that ask for superseded facts.

An archived row keeps its ``seq`` (``memories.seq`` is AUTOINCREMENT: never reused), so a seq
names one document wherever it is, and ``memories_all`` (a view: both tables) serves every read
by id, owner or type. Recall without superseded facts never touches the archive; a recall with
``RecallFilter.include_archived`` ranks the owner's archived rows with the same legs
(``candidates``), read from the table for that one recall (no cached snapshot: a rare read).
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from typing import Any

import numpy as np

from memory.engine.embedded import snapshots
from memory.engine.embedded.scopes import owner_key
from memory.engine.embedded.snapshots import Candidate, Snapshot, Vector, sortable
from memory.engine.embedded.store import bump, fts_fields, unindex_row
from memory.engine.types import LegQuery, MemoryDoc, MemoryType

COLUMNS = (
    "seq, id, owner, tenant_id, user_id, memory_type, created_at, timestamp, superseded_by,"
    " decay_at, use_count, rev, session_id, project, unit, source, embedding"
)
SCHEMA = (
    """CREATE TABLE IF NOT EXISTS memories_archive (
        seq INTEGER PRIMARY KEY,                -- the row's seq in memories, kept
        id TEXT NOT NULL UNIQUE,
        owner TEXT NOT NULL,
        tenant_id TEXT NOT NULL,
        user_id TEXT,
        memory_type TEXT NOT NULL,
        created_at TEXT NOT NULL,
        timestamp TEXT NOT NULL,
        superseded_by TEXT,
        decay_at REAL,
        use_count INTEGER NOT NULL,
        rev INTEGER NOT NULL,
        session_id TEXT,
        project TEXT,
        unit BLOB,
        source TEXT NOT NULL,
        embedding BLOB,
        superseded_at TEXT NOT NULL,            -- sortable(): what retention compares
        archived_at TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS memories_archive_owner"
    " ON memories_archive (owner, memory_type, superseded_at)",
    "CREATE INDEX IF NOT EXISTS memories_archive_created"
    " ON memories_archive (owner, created_at, id)",
    """CREATE VIRTUAL TABLE IF NOT EXISTS memories_archive_fts USING fts5(
        owner, text, name, description, trigger_text, content='', tokenize='porter unicode61'
    )""",
    f"""CREATE VIEW IF NOT EXISTS memories_all AS
        SELECT {COLUMNS} FROM memories UNION ALL SELECT {COLUMNS} FROM memories_archive""",  # noqa: S608 - fixed text
)


def move(
    conn: sqlite3.Connection, *, tenant_id: str, user_id: str, before: datetime, limit: int
) -> list[str]:
    """Move up to ``limit`` of the owner's facts superseded before ``before`` into the archive
    (inside the caller's write transaction)."""
    owner = owner_key(tenant_id, user_id)
    rows = conn.execute(
        "SELECT seq, id, source FROM memories WHERE owner = ? AND tenant_id = ?"
        " AND memory_type = 'semantic' AND superseded_by IS NOT NULL ORDER BY seq",
        (owner, tenant_id),
    ).fetchall()
    due: list[tuple[int, str, dict[str, Any], datetime]] = []
    for seq, doc_id, text in rows:
        if len(due) >= limit:
            break
        source = json.loads(text)
        # As Elasticsearch's range query: a fact without ``superseded_at`` is never archived.
        at = _superseded_at(source) if "superseded_at" in source else None
        if at is not None and at < before:
            due.append((seq, doc_id, source, at))
    now = sortable(datetime.now().astimezone())
    for seq, _, source, at in due:
        conn.execute(
            f"INSERT INTO memories_archive ({COLUMNS}, superseded_at, archived_at)"  # noqa: S608
            f" SELECT {COLUMNS}, ?, ? FROM memories WHERE seq = ?",
            (sortable(at), now, seq),
        )
        _fts_insert(conn, seq, fts_fields(owner, source))
        unindex_row(conn, seq, owner, source)
        conn.execute("DELETE FROM memories WHERE seq = ?", (seq,))
    if due:
        bump(conn, owner, removed=[row[0] for row in due])  # the owner's snapshots drop them
    return [row[1] for row in due]


def delete(conn: sqlite3.Connection, where: str, params: tuple[Any, ...]) -> list[str]:
    """Delete the archived rows matching ``where`` (fixed SQL over the table's columns, values
    in ``params``) and their words; returns their ids."""
    rows = conn.execute(
        f"DELETE FROM memories_archive WHERE {where} RETURNING seq, id, owner, source",  # noqa: S608
        params,
    ).fetchall()
    for seq, _, owner, text in rows:
        _fts_delete(conn, seq, fts_fields(owner, json.loads(text)))
    return [row[1] for row in rows]


def expire(
    conn: sqlite3.Connection, *, tenant_id: str, user_id: str, before: datetime, limit: int
) -> list[str]:
    where = (
        "seq IN (SELECT seq FROM memories_archive WHERE owner = ? AND tenant_id = ?"
        " AND superseded_at < ? ORDER BY superseded_at LIMIT ?)"
    )
    return delete(conn, where, (owner_key(tenant_id, user_id), tenant_id, sortable(before), limit))


def count(
    conn: sqlite3.Connection, *, tenant_id: str, user_id: str, among: list[str] | None
) -> int:
    where = "owner = ? AND tenant_id = ?"
    params: tuple[Any, ...] = (owner_key(tenant_id, user_id), tenant_id)
    if among is not None:
        where += " AND id IN (SELECT value FROM json_each(?))"
        params += (json.dumps(among),)
    (n,) = conn.execute(
        f"SELECT count(*) FROM memories_archive WHERE {where}",  # noqa: S608 - fixed text
        params,
    ).fetchone()
    return int(n)


def candidates(
    conn: sqlite3.Connection,
    *,
    owner: str,
    tenant_id: str,
    kinds: tuple[MemoryType, ...],
    query: LegQuery,
    vector: Vector | None,
    lexical: str | None,
    dims: int,
) -> tuple[list[Candidate], list[Candidate]]:
    """The owner's archived rows as both legs rank them (lexical: the FTS5 ``lexical`` match
    expression, None: no lexical leg; dense: ``vector``)."""
    rows = conn.execute(
        "SELECT seq, memory_type, 1, timestamp, decay_at, use_count, coalesce(project, ''),"
        " unit IS NOT NULL, unit FROM memories_archive WHERE owner = ? AND tenant_id = ?"
        " ORDER BY seq",
        (owner, tenant_id),
    ).fetchall()
    if not rows:
        return [], []
    snapshot = Snapshot.from_rows(rows, rev=0, purged=0, dims=dims)
    only = None
    if query.filter.ids is not None:
        only = np.asarray(
            [
                row[0]
                for row in conn.execute(
                    "SELECT seq FROM memories_archive WHERE id IN (SELECT value FROM json_each(?))",
                    (json.dumps(list(query.filter.ids)),),
                )
            ],
            dtype=np.int64,
        )
    mask = snapshots.recall_mask(snapshot, kinds, query.filter, only)
    lexical_found: list[Candidate] = []
    if lexical is not None:
        scores = conn.execute(
            "SELECT rowid, -bm25(memories_archive_fts, 0, 1, 0.5, 0.3, 0.5)"
            " FROM memories_archive_fts WHERE memories_archive_fts MATCH ?",
            (lexical,),
        ).fetchall()
        seqs = np.fromiter((s for s, _ in scores), dtype=np.int64, count=len(scores))
        bm25 = np.fromiter((b for _, b in scores), dtype=np.float64, count=len(scores))
        lexical_found = snapshots.lexical_candidates(snapshot, mask, seqs, bm25, query)
    dense_found: list[Candidate] = []
    if vector is not None:
        dense_found = snapshots.dense_candidates(snapshot, mask, vector, query)
    return lexical_found, dense_found


def _superseded_at(source: dict[str, Any]) -> datetime:
    doc = MemoryDoc.from_source(source)
    return doc.superseded_at or doc.created_at


def _fts_insert(conn: sqlite3.Connection, seq: int, fields: tuple[str | None, ...]) -> None:
    conn.execute(
        "INSERT INTO memories_archive_fts (rowid, owner, text, name, description, trigger_text)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (seq, *fields),
    )


def _fts_delete(conn: sqlite3.Connection, seq: int, fields: tuple[str | None, ...]) -> None:
    conn.execute(
        "INSERT INTO memories_archive_fts (memories_archive_fts, rowid, owner, text, name,"
        " description, trigger_text) VALUES ('delete', ?, ?, ?, ?, ?, ?)",
        (seq, *fields),
    )
