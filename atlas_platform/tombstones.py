"""The tombstone log: what was erased or revoked, kept outside every store a backup restores.

A restore brings back the database and the memory store as they were when the backup was
taken. Whatever was forgotten, erased or revoked after that moment would come back with them;
this tombstone log is how the restore knows to take it out again (``lifecycle.services.restore``).

It is an append-only SQLite file of its own (``ATLAS_TOMBSTONES_PATH``), never part of a backup
and never written by a restore, so it outlives them. Entries are content-free: ids, counts
and times, never a memory's text. Kinds:

- ``memory.forget``: ``tenant``, ``user`` (memory ids), ``memory_ids``: a user's forget.
- ``erasure``: ``tenant``, ``user``, ``memory_ids`` (None: every memory of the user),
  ``delete_user``, ``forget_request``: a forget request's job, recorded before its receipt.
- ``token.revoke``: ``lookup``: a platform token revoked.

A backup's manifest records ``tombstone_position()`` (taken before anything is copied); a
restore re-applies every entry after it (re-applying is idempotent).
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings

from atlas_platform.exceptions import Unavailable

SCHEMA = """CREATE TABLE IF NOT EXISTS entries (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    kind TEXT NOT NULL,
    fields TEXT NOT NULL
)"""


class LedgerUnavailable(Unavailable):
    """The tombstone log file could not be read or written."""

    code = "ledger_unavailable"
    public_message = "The tombstone log is unavailable; try again."


@dataclass(frozen=True)
class Entry:
    """One tombstone log line: its position, when, what kind, and its content-free fields."""

    seq: int
    at: datetime
    kind: str
    fields: dict[str, Any]


def _connect() -> sqlite3.Connection:
    path = Path(settings.ATLAS_TOMBSTONES_PATH)
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=5.0, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")  # an erasure's entry must survive a crash
    conn.execute(SCHEMA)
    return conn


def tombstone_record(kind: str, **fields: Any) -> int:
    """Append one entry (ids only, never text); its position."""
    try:
        with closing(_connect()) as conn:
            row = conn.execute(
                "INSERT INTO entries (at, kind, fields) VALUES (?, ?, ?) RETURNING seq",
                (datetime.now(UTC).isoformat(), kind, json.dumps(fields, sort_keys=True)),
            ).fetchone()
    except sqlite3.Error as exc:
        raise LedgerUnavailable(f"tombstone log: {exc}") from exc
    return int(row[0])


def tombstone_position() -> int:
    """The position of the newest entry (0: none yet)."""
    try:
        with closing(_connect()) as conn:
            (seq,) = conn.execute("SELECT coalesce(max(seq), 0) FROM entries").fetchone()
    except sqlite3.Error as exc:
        raise LedgerUnavailable(f"tombstone log: {exc}") from exc
    return int(seq)


def tombstones_since(position: int) -> list[Entry]:
    """Every entry after ``position``, oldest first."""
    try:
        with closing(_connect()) as conn:
            rows = conn.execute(
                "SELECT seq, at, kind, fields FROM entries WHERE seq > ? ORDER BY seq",
                (position,),
            ).fetchall()
    except sqlite3.Error as exc:
        raise LedgerUnavailable(f"tombstone log: {exc}") from exc
    return [
        Entry(seq=seq, at=datetime.fromisoformat(at), kind=kind, fields=json.loads(fields))
        for seq, at, kind, fields in rows
    ]
