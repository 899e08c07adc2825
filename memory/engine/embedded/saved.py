"""The owners' dense indexes saved beside the store's file: ``<file>-ann/<owner>.index`` in
``ann``'s format, so that a new process loads an owner's index instead of training it again
(150 s of CPU at a million vectors).

``store`` saves an index after it is built and once it has taken in ``SAVE_SHARE`` of its
rows in changes, and loads it when a process has none, then catches it up from the revision
it reflects. A delete of the owner's rows drops the file in the deleting transaction
(``store.bump`` calls ``drop`` through a SQLite function; if it fails, so does the delete):
no file ever holds a forgotten or erased row. A save replaces the file (``os.replace``) under
the store's write lock, and only while no delete came after the index's revision, so it
cannot race a delete back in. The store's ``instance`` (a random id in ``settings``, new on a
restore) tells its files from those of another store made at the same path.

Beside an owner's index, its snapshot's small columns (``<owner>.snapshot.npz``: seqs, kinds,
times, usage; no vectors, no text): reading them from a million rows took 7 of a new process's
8.4 s first recall. Saved with the index, and after a process had to read them from the rows;
loaded when the owner's deletes are the same as when it was saved (the rows written since are
read and merged, as for a cached snapshot), dropped with the index by any delete.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memory.engine.embedded import ann
from memory.engine.embedded.ann import DenseIndex
from memory.engine.embedded.snapshots import Snapshot

log = logging.getLogger(__name__)

SAVE_SHARE = 0.05  # an index is saved again once it took in this share of its rows in changes
SAVE_MIN_ROWS = 1_000
LOCK_TIMEOUT_S = 5.0


class SavedIndexes:
    """The saved indexes of the store at ``store_path`` (of ``dims``-d vectors)."""

    def __init__(self, store_path: Path, dims: int) -> None:
        self.store_path = store_path
        self.dims = dims
        self.folder = Path(f"{store_path}-ann")

    def path(self, owner: str) -> Path:
        return self.folder / f"{owner}.index"

    def snapshot_path(self, owner: str) -> Path:
        return self.folder / f"{owner}.snapshot.npz"

    def about(self, conn: sqlite3.Connection, owner: str, tenant_id: str) -> dict[str, Any]:
        """What an owner's file is saved for: this store (its instance), the owner, its tenant."""
        row = conn.execute("SELECT value FROM settings WHERE name = 'instance'").fetchone()
        return {"store": row[0] if row else None, "owner": owner, "tenant": tenant_id}

    def load(
        self, conn: sqlite3.Connection, owner: str, tenant_id: str, rev: int, purged: int
    ) -> DenseIndex | None:
        """The owner's saved index if it is sound and not ahead of the store (``rev``,
        ``purged``: the owner's as the caller's transaction sees them); the caller catches it up."""
        index = DenseIndex.load(self.path(owner), self.about(conn, owner, tenant_id), self.dims)
        if index is not None and (index.rev > rev or index.purged > purged):
            log.warning("saved dense index of %s is ahead of the store: built again", owner)
            return None
        return index

    def load_snapshot(
        self, conn: sqlite3.Connection, owner: str, tenant_id: str, rev: int, purged: int
    ) -> Snapshot | None:
        """The owner's saved snapshot if it is sound, has seen every delete the store has
        (``purged``) and is not ahead of it (``rev``); the caller merges the rows since."""
        snapshot = Snapshot.load(self.snapshot_path(owner), self.about(conn, owner, tenant_id))
        if snapshot is None or snapshot.purged != purged or snapshot.rev > rev:
            return None
        return snapshot

    def save_snapshot(
        self, conn: sqlite3.Connection, owner: str, tenant_id: str, snapshot: Snapshot
    ) -> None:
        """Write the small columns of ``snapshot`` (an owner with a dense index), unless a
        delete came after it. A failure is logged, never raised: the rows are read instead."""
        about = self.about(conn, owner, tenant_id)
        if about["store"] is not None:
            self._write(
                self.snapshot_path(owner),
                owner,
                snapshot.purged,
                lambda temp: snapshot.save(temp, about),
            )

    def _replace(self, temp: Path, target: Path, owner: str, purged: int) -> None:
        """``temp`` becomes ``target`` under the store's write lock, unless the owner's rows
        were deleted since what it reflects (``purged``): a delete drops files under it."""
        with contextlib.closing(
            sqlite3.connect(self.store_path, timeout=LOCK_TIMEOUT_S, isolation_level=None)
        ) as lock:
            lock.execute("BEGIN IMMEDIATE")
            (now,) = lock.execute(
                "SELECT purged FROM owners WHERE owner = ?", (owner,)
            ).fetchone() or (None,)
            if now == purged:
                os.replace(temp, target)
            lock.execute("COMMIT")

    @staticmethod
    def due(index: DenseIndex, min_rows: int) -> bool:
        """Whether ``index`` should be saved: never saved since a build or a delete, or it took
        in enough changes since its file was written (a large index is not rewritten per write)."""
        if len(index) < min_rows:
            return False
        return index.saved_purged != index.purged or index.changed >= max(
            SAVE_MIN_ROWS, SAVE_SHARE * len(index)
        )

    def save(self, conn: sqlite3.Connection, owner: str, tenant_id: str, index: DenseIndex) -> None:
        """Write ``index`` (its lock held) unless a file as new is there. A failure is logged,
        never raised: the next process builds the index itself."""
        index.changed, index.saved_purged = 0, index.purged
        about = self.about(conn, owner, tenant_id)
        target = self.path(owner)
        if about["store"] is None or self._is_current(target, index):
            return
        self._write(target, owner, index.purged, lambda temp: index.save(temp, about))

    def _write(self, target: Path, owner: str, purged: int, write: Callable[[Path], None]) -> None:
        """``write`` a temporary file, then make it ``target`` unless the owner's rows were
        deleted since what it reflects (``purged``). A failure is logged, never raised."""
        temp = target.with_name(f"{target.name}.{os.getpid()}-{threading.get_ident()}.tmp")
        try:
            self.folder.mkdir(exist_ok=True)
            write(temp)
            self._replace(temp, target, owner, purged)
        except (OSError, sqlite3.Error) as exc:
            log.warning("%s not saved: %s", target.name, exc)
        finally:
            temp.unlink(missing_ok=True)

    def _is_current(self, target: Path, index: DenseIndex) -> bool:
        try:
            with target.open("rb") as file:
                meta = ann.saved_meta(file)
        except (OSError, ValueError):
            return False
        return (
            meta is not None
            and meta.get("purged") == index.purged
            and int(meta.get("rev", 0)) >= index.rev
        )

    def drop(self, owner: str) -> None:
        """Remove the owner's saved index and any being written (in a deleting transaction)."""
        for path in self.folder.glob(f"{owner}.*"):
            path.unlink(missing_ok=True)

    def drop_all(self) -> None:
        """Remove every saved index (the store's file was replaced under them)."""
        for path in self.folder.glob("*"):
            path.unlink(missing_ok=True)
