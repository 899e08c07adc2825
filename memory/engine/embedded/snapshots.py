"""The embedded backend's in-memory side: per-owner numpy snapshots of what both recall legs
filter and rank on, and the ranking signals vectorised over them.

An owner is one (tenant, user) pair, or a tenant's catalog. A snapshot is immutable (threads
share it); a newer one replaces it whole, built from the rows written since (a small owner's
new vectors go into the room kept after its matrix: ``MatrixRoom``). Its columns are small
types (a kind is one byte, a time eight). The unit vectors are a float32 matrix while the
owner is small; past ``ann.MIN_ROWS`` they live in the owner's ``DenseIndex`` instead (shared,
kept in step by ``store``) and the snapshot holds none.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import threading
import zipfile
from collections import OrderedDict
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import numpy.typing as npt

from memory.engine.types import (
    MEMORY_TYPES,
    LegQuery,
    MemoryDoc,
    MemoryType,
    Ranking,
    RecallFilter,
)

if TYPE_CHECKING:
    from memory.engine.embedded.ann import DenseIndex

Vector = npt.NDArray[np.float32]
Mask = npt.NDArray[np.bool_]
Rows = npt.NDArray[np.intp]
Scores = npt.NDArray[np.float64]
Kinds = npt.NDArray[np.uint8]
Times = npt.NDArray[np.datetime64]

log = logging.getLogger(__name__)

DENSE_FETCH = 2  # the index's hits per wanted candidate, for the multipliers to choose from
SAVED_COLUMNS = (
    "seqs", "kinds", "superseded", "timestamps", "decay_at", "use_count", "projects", "has_unit",
)  # fmt: skip
KIND_CODES: dict[str, int] = {kind: code for code, kind in enumerate(MEMORY_TYPES)}


def kind_code(kind: str) -> int:
    return KIND_CODES[kind]


def as_time(text: str) -> np.datetime64:
    return np.datetime64(text, "us")


ROOM_GROWTH = 1.25  # a small owner's matrix keeps this much room for the rows written next


class MatrixRoom:
    """A small owner's matrix with spare rows after it, so a write appends its vectors in
    place instead of copying the whole matrix (~3 ms per write at 10k rows). A snapshot's
    matrix is a view of the buffer's first rows: an older snapshot's shorter view never sees
    the rows written after it, and only the newest view (``used`` rows) may claim the rows
    that follow; any other copies."""

    def __init__(self, buffer: Vector, used: int) -> None:
        self.buffer = buffer
        self.used = used
        self.lock = threading.Lock()


def appended(matrix: Vector, room: MatrixRoom | None, rows: Vector) -> tuple[Vector, MatrixRoom]:
    """``matrix`` with ``rows`` after it (a view of ``room``'s buffer when ``matrix`` is its
    newest view and there is room), and the room that holds it."""
    start, end = len(matrix), len(matrix) + len(rows)
    if room is not None and matrix.base is room.buffer and end <= len(room.buffer):
        with room.lock:
            if room.used == start:  # the newest view: nobody has claimed the rows after it
                room.buffer[start:end] = rows
                room.used = end
                return room.buffer[:end], room
    buffer = np.empty((int(end * ROOM_GROWTH) + 16, matrix.shape[1]), dtype=np.float32)
    buffer[:start] = matrix
    buffer[start:end] = rows
    return buffer[:end], MatrixRoom(buffer, end)


class Candidate(NamedTuple):
    score: float  # raw * the vectorised multiplier: only to choose and order candidates
    raw: float
    seq: int


@dataclass(frozen=True)
class Snapshot:
    """One owner's rows at ``rev`` (``purged`` counts its deletes), sorted by seq."""

    rev: int
    purged: int
    seqs: npt.NDArray[np.int64]
    kinds: Kinds  # KIND_CODES
    superseded: Mask
    timestamps: Times  # UTC, microseconds
    decay_at: Scores  # epoch seconds the time decay reads (NaN: exempt)
    use_count: Scores
    projects: npt.NDArray[np.str_]  # MemoryDoc.project, "" for none
    units: Vector  # unit vectors, zeros where has_unit is False; no rows when ``dense`` is set
    has_unit: Mask
    dense: DenseIndex | None = None  # the owner's index (shared with its other snapshots)
    room: MatrixRoom | None = None  # the buffer ``units`` is a view of, with room to append

    COLUMNS = (
        "seqs", "kinds", "superseded", "timestamps", "decay_at", "use_count", "projects", "units",
        "has_unit",
    )  # fmt: skip

    @classmethod
    def from_rows(
        cls, rows: list[Any], *, rev: int, purged: int, dims: int, units: bool = True
    ) -> Snapshot:
        """From ``(seq, memory_type, superseded, timestamp, decay_at, use_count, project,
        has_unit, unit)`` rows in seq order, ``project`` "" for none, ``unit`` a float32 blob
        or None; ``units`` False: the vectors were not read (no matrix; ``has_unit`` still says
        which rows have one)."""
        empty: list[tuple[Any, ...]] = [()] * 9
        seqs, kinds, superseded, stamps, decay_at, uses, projects, has, vectors = (
            zip(*rows, strict=True) if rows else empty
        )
        has_unit = np.array(has, dtype=np.bool_)
        loaded = np.array([unit is not None for unit in vectors], dtype=np.bool_)
        matrix = np.zeros((len(rows) if units else 0, dims), dtype=np.float32)
        if units and loaded.any():
            packed = b"".join(unit for unit in vectors if unit is not None)
            matrix[loaded] = np.frombuffer(packed, dtype=np.float32).reshape(-1, dims)
        return cls(
            rev=rev,
            purged=purged,
            seqs=np.array(seqs, dtype=np.int64),
            kinds=np.array([KIND_CODES[kind] for kind in kinds], dtype=np.uint8),
            superseded=np.array(superseded, dtype=np.bool_),
            timestamps=np.array(stamps, dtype="datetime64[us]"),
            decay_at=np.array(decay_at, dtype=np.float64),
            use_count=np.array(uses, dtype=np.float64),
            projects=np.array(projects, dtype=np.str_),
            units=matrix,
            has_unit=has_unit,
        )

    def merged(self, fresh: Snapshot) -> Snapshot:
        """This snapshot with ``fresh``'s rows replacing or joining its own, as a new snapshot.
        Only the columns that change are copied: a usage bump (known rows, same vectors) shares
        this snapshot's matrix, new rows' vectors are appended in the matrix's room
        (``appended``), and an owner with a ``dense`` index has no matrix to copy."""
        pos = self.positions(fresh.seqs)
        known = pos >= 0
        columns: dict[str, Any] = {}
        room = None
        for name in self.COLUMNS:
            mine, theirs = getattr(self, name), getattr(fresh, name)
            if name == "units" and (self.dense is not None or len(mine) != len(self.seqs)):
                columns[name] = mine[:0]  # no matrix: the vectors are in the index
                continue
            same = np.array_equal(mine[pos[known]], theirs[known])
            if known.all() and same:
                columns[name] = mine  # unchanged: shared, never copied
                if name == "units":
                    room = self.room  # and its room kept for the next write
                continue
            if name == "units" and same:  # new rows only: into the room after the matrix
                columns[name], room = appended(mine, self.room, theirs[~known])
                continue
            if known.all():
                columns[name] = mine.copy()
            else:
                columns[name] = np.concatenate([mine, theirs[~known]])
            columns[name][pos[known]] = theirs[known]
        if np.any(np.diff(columns["seqs"]) < 0):  # a row moved here from another owner
            order = np.argsort(columns["seqs"])
            columns = {
                name: column[order] if len(column) else column for name, column in columns.items()
            }
            room = None
        return Snapshot(rev=fresh.rev, purged=fresh.purged, dense=self.dense, room=room, **columns)

    def without(self, seqs: npt.NDArray[np.int64], *, purged: int) -> Snapshot:
        """This snapshot less the rows ``seqs`` (deleted since), as of the owner's ``purged``
        deletes; its revision stays, so the rows written since are merged after."""
        keep = ~np.isin(self.seqs, seqs)
        if keep.all():
            return dataclasses.replace(self, purged=purged)
        columns = {name: getattr(self, name)[keep] for name in self.COLUMNS if name != "units"}
        has_matrix = self.dense is None and len(self.units) == len(self.seqs)
        columns["units"] = self.units[keep] if has_matrix else self.units[:0]
        return Snapshot(rev=self.rev, purged=purged, dense=self.dense, room=None, **columns)

    # --- on disk (an owner with a dense index: its small columns, no vectors) ------------------
    def save(self, path: Path, about: dict[str, Any]) -> None:
        """Write the small columns to ``path``, a new file (``np.savez``, no pickles), with
        ``about``, the revision they reflect and a SHA-256 of the columns."""
        columns: dict[str, Any] = {
            name: np.ascontiguousarray(getattr(self, name)) for name in SAVED_COLUMNS
        }
        meta = about | {"rev": self.rev, "purged": self.purged, "sha256": _digest(columns)}
        with path.open("xb") as out:
            np.savez(out, meta=np.frombuffer(json.dumps(meta).encode(), np.uint8), **columns)

    @classmethod
    def load(cls, path: Path, about: dict[str, Any]) -> Snapshot | None:
        """The snapshot saved at ``path`` for ``about`` (its vectors in the owner's index);
        None when there is none, or it is for something else, or is damaged."""
        try:
            with np.load(path, allow_pickle=False) as saved:
                meta = json.loads(saved["meta"].tobytes())
                if {key: meta.get(key) for key in about} != about:
                    raise ValueError(f"saved for something else: {meta}")
                columns = {name: saved[name] for name in SAVED_COLUMNS}
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as exc:
            log.warning("saved snapshot %s not loaded, rows read instead: %s", path.name, exc)
            return None
        sizes = {len(column) for column in columns.values()}
        seqs = columns["seqs"]
        if _digest(columns) != meta.get("sha256") or len(sizes) > 1 or np.any(np.diff(seqs) <= 0):
            log.warning("saved snapshot %s is damaged: rows read instead", path.name)
            return None
        empty = np.zeros((0, 0), dtype=np.float32)  # no matrix: the owner's index holds them
        return cls(rev=int(meta["rev"]), purged=int(meta["purged"]), units=empty, **columns)

    def positions(self, seqs: npt.NDArray[np.int64]) -> Rows:
        """Where each of ``seqs`` sits in this snapshot, -1 where it is not here."""
        if not len(self.seqs):
            return np.full(len(seqs), -1, dtype=np.intp)
        pos = np.minimum(np.searchsorted(self.seqs, seqs), len(self.seqs) - 1)
        return np.where(self.seqs[pos] == seqs, pos, -1)

    @property
    def nbytes(self) -> int:
        """The memory its columns hold (the matrix's spare rows included)."""
        spare = 0
        if self.room is not None and self.units.base is self.room.buffer:
            spare = self.room.buffer.nbytes - self.units.nbytes
        return spare + sum(int(getattr(self, name).nbytes) for name in self.COLUMNS)


class SnapshotCache:
    """The newest snapshot per owner, least recently used dropped first past ``max_bytes``."""

    def __init__(self, max_bytes: int) -> None:
        self._max_bytes = max_bytes
        self._snapshots: OrderedDict[str, Snapshot] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, owner: str) -> Snapshot | None:
        with self._lock:
            return self._snapshots.get(owner)

    def put(self, owner: str, snapshot: Snapshot, keep: Collection[str] = ()) -> None:
        """Keep ``snapshot`` as ``owner``'s; past ``max_bytes`` drop the least recently used,
        never one of ``keep`` (the owners of the read putting it: a read must not evict the
        snapshot it needs, as the catalog's once evicted a large user's on every recall)."""
        with self._lock:
            cached = self._snapshots.get(owner)
            if cached is None or cached.rev <= snapshot.rev:  # an older reader may come last
                self._snapshots[owner] = snapshot
            self._snapshots.move_to_end(owner)
            kept = {owner, *keep}
            while self._total_bytes() > self._max_bytes:
                victim = next((name for name in self._snapshots if name not in kept), None)
                if victim is None:
                    break
                del self._snapshots[victim]

    def _total_bytes(self) -> int:
        return sum(snapshot.nbytes for snapshot in self._snapshots.values())


def _digest(columns: dict[str, npt.NDArray[Any]]) -> str:
    digest = hashlib.sha256()
    for name in SAVED_COLUMNS:
        column = columns[name]
        digest.update(f"{name}:{column.dtype.str}:{column.shape}".encode())
        digest.update(np.ascontiguousarray(column).tobytes())
    return digest.hexdigest()


def sortable(moment: datetime) -> str:
    """Fixed-width UTC ISO 8601 (naive means UTC), so text order is time order."""
    aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return aware.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds")


def recall_mask(
    snapshot: Snapshot,
    kinds: tuple[MemoryType, ...],
    wanted: RecallFilter,
    only_seqs: npt.NDArray[np.int64] | None = None,
) -> Mask:
    """The rows a leg may rank: the kinds and the filter's window; ``only_seqs``: the rows of
    the filter's ``ids`` (none other is ranked)."""
    mask = kinds_table(kinds)[snapshot.kinds]  # a lookup: np.isin sorts all rows (~6x slower)
    if only_seqs is not None:
        mask &= np.isin(snapshot.seqs, only_seqs)
    if not wanted.include_superseded:
        mask &= ~snapshot.superseded
    if wanted.since is not None:
        mask &= snapshot.timestamps >= as_time(sortable(wanted.since))
    if wanted.until is not None:
        mask &= snapshot.timestamps <= as_time(sortable(wanted.until))
    if wanted.project is not None:
        scoped = snapshot.projects == wanted.project
        if wanted.include_unscoped:
            scoped |= snapshot.projects == ""
        mask &= scoped | (snapshot.kinds == KIND_CODES["catalog"])
    return mask


def kinds_table(kinds: tuple[MemoryType, ...]) -> Mask:
    """True at the codes of ``kinds``, to index with a column of codes."""
    table = np.zeros(256, dtype=np.bool_)
    table[[KIND_CODES[kind] for kind in kinds]] = True
    return table


def lexical_candidates(
    snapshot: Snapshot, mask: Mask, seqs: npt.NDArray[np.int64], bm25: Scores, query: LegQuery
) -> list[Candidate]:
    """The best of the full-text matches ``seqs`` (scored ``bm25``) that are in ``mask``."""
    pos = snapshot.positions(seqs)
    keep = pos >= 0
    keep[keep] = mask[pos[keep]]
    return best_candidates(snapshot, pos[keep], bm25[keep], query)


def dense_candidates(
    snapshot: Snapshot, mask: Mask, vector: Vector, query: LegQuery
) -> list[Candidate]:
    """The best rows of ``mask`` by cosine (times the multipliers): exact over the matrix, or
    the owner's dense index searched for ``DENSE_FETCH`` times ``query.size`` of the rows in
    ``mask`` (the multipliers then choose among them; the legs rescore with exact vectors)."""
    usable = mask & snapshot.has_unit
    if snapshot.dense is None:
        rows = np.flatnonzero(usable)
        if not rows.size:
            return []
        cosine = (snapshot.units @ vector)[rows].astype(np.float64)
    else:
        allowed = None if np.array_equal(usable, snapshot.has_unit) else snapshot.seqs[usable]
        found, scores = snapshot.dense.search(vector, DENSE_FETCH * query.size, allowed)
        pos = snapshot.positions(found)
        keep = pos >= 0  # a row the index holds but this snapshot does not: never returned
        keep[keep] = usable[pos[keep]]
        rows, cosine = pos[keep], np.asarray(scores, dtype=np.float64)[keep]
    return best_candidates(snapshot, rows, (1.0 + cosine) / 2.0, query)  # as Elasticsearch


def best_candidates(
    snapshot: Snapshot, rows: Rows, raw: Scores, query: LegQuery
) -> list[Candidate]:
    scores = raw * multipliers(snapshot, rows, query.ranking, query.now)
    best = np.argsort(-scores, kind="stable")[: query.size]
    return [Candidate(float(scores[i]), float(raw[i]), int(snapshot.seqs[rows[i]])) for i in best]


# These two mirror base.signal_multiplier, so thousands of candidates are ranked without a
# MemoryDoc each; the backend rescores the hits it returns with signal_multiplier itself.
def decay_anchor(doc: MemoryDoc) -> float | None:
    if doc.memory_type in ("episodic", "entity"):
        return doc.timestamp.timestamp()
    if doc.memory_type == "semantic":
        return (doc.last_used_at or doc.created_at).timestamp()
    return None


def multipliers(snapshot: Snapshot, rows: Rows, ranking: Ranking, now: datetime) -> Scores:
    kinds = snapshot.kinds[rows]
    factor = np.ones(len(rows), dtype=np.float64)
    decaying = np.isin(
        kinds, [KIND_CODES["episodic"], KIND_CODES["semantic"], KIND_CODES["entity"]]
    )
    if ranking.apply_decay and decaying.any():
        age_days = np.abs(now.timestamp() - snapshot.decay_at[rows][decaying]) / 86400.0
        distance = np.maximum(0.0, age_days - ranking.decay_offset_days)
        sigma_sq = -(ranking.decay_scale_days**2) / (2.0 * math.log(ranking.decay))
        factor[decaying] = np.exp(-(distance**2) / (2.0 * sigma_sq))
    semantic = kinds == KIND_CODES["semantic"]
    uses = snapshot.use_count[rows][semantic]
    factor[semantic] *= 1.0 + np.log10(1.0 + uses) * ranking.use_count_weight
    factor[kinds == KIND_CODES["catalog"]] = ranking.catalog_prior
    return factor
