"""The dense leg past ``MIN_ROWS`` vectors: one approximate nearest-neighbour index per owner.

faiss (``faiss-cpu``) IVF with 8-bit scalar-quantised vectors (``IndexIVFScalarQuantizer``,
inner product on unit vectors = cosine): measured against usearch and faiss HNSW on this
machine (docs/performance.md, "The embedded backend at a million memories"), it builds in a
fraction of HNSW's time, holds a million 384-d vectors in ~400 MB, deletes in place (a hash
table from seq to list entry) and filters *during* the search (a bitmap of the rows the
caller may see), so a filter never empties the result the way over-fetch-then-filter can.

Keys are the rows' ``seq``. The index is the owner's alone: another owner's row cannot be in
it. ``store`` keeps it in step (``catch_up``: the rows written since its ``rev`` added again,
the rows gone since a delete taken out); a search's hits are read through the caller's
snapshot, so a row the snapshot does not hold is never returned even before that. Scores are
approximate (8-bit); the legs rescore the hits they keep with the stored float32 vectors.

An index is saved to one file (``save`` / ``load``): its seqs, faiss's own serialisation, and a
trailer naming what it was saved for (``about``: the store, the owner, the dimensions, the
faiss version, the revision it reflects) with a SHA-256 of the rest. A file that does not
match in every respect, or does not parse, loads as None: the caller builds the index again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import struct
import threading
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt

logging.getLogger("faiss.loader").setLevel(logging.WARNING)  # which CPU build it loaded

import faiss  # noqa: E402 - after its loader's log level

log = logging.getLogger(__name__)

# One thread: a server process answers requests in parallel already, and OpenMP's team for an
# add of a few rows cost ~10x the add itself on this busy 2-core machine (spinning waits).
faiss.omp_set_num_threads(1)

MIN_ROWS = 20_000  # below: exact numpy over the snapshot's float32 matrix
EXACT_ROWS = 4_000  # a filter leaving at most this many rows: exact over them
PROBE_SHARE = 0.1  # of the lists searched (nprobe; docs/performance.md: recall@80 by size)
TRAIN_PER_LIST = 40  # training vectors per list (faiss asks for 39 or more)
FILE_FORMAT = 1
TRAILER = struct.Struct("<Q8s")  # the trailer's length, then MAGIC: the file's last 16 bytes
MAGIC = b"atlasann"
CHUNK = 8 * 2**20  # bytes hashed or copied at a time


def sample_size(rows: int) -> int:
    """How many of an owner's ``rows`` vectors train its index: ``2 sqrt(rows)`` lists
    (1,000 for a million, so a search probes ~40 lists of ~1,000 rows)."""
    return min(rows, TRAIN_PER_LIST * max(16, int(2 * math.sqrt(rows))))


Seqs = npt.NDArray[np.int64]
Units = npt.NDArray[np.float32]


class DenseIndex:
    """An owner's unit vectors by seq, searchable by inner product."""

    def __init__(self, index: Any, seqs: Seqs) -> None:
        """Over a faiss IVF index holding exactly the rows ``seqs`` (sorted); use ``trained``
        for a new one, ``load`` for a saved one."""
        self.dims = int(index.d)
        self.rev = 0
        self.purged = 0
        self.changed = 0  # rows added or taken out since it was saved or loaded
        self.saved_purged: int | None = None  # ``purged`` when it was saved or loaded
        self.lock = threading.Lock()
        self._seqs = seqs
        self._index = index
        self._probes = max(1, math.ceil(index.nlist * PROBE_SHARE))

    @classmethod
    def trained(cls, dims: int, sample: Units) -> DenseIndex:
        """An empty index trained on ``sample`` (``sample_size`` of the owner's vectors, spread
        over them)."""
        lists = max(1, len(sample) // TRAIN_PER_LIST)
        # An inner-product IVF over 8-bit scalar-quantised vectors, owning its quantizer.
        index = faiss.index_factory(dims, f"IVF{lists},SQ8", faiss.METRIC_INNER_PRODUCT)
        index.train(np.ascontiguousarray(sample, dtype=np.float32))
        index.set_direct_map_type(faiss.DirectMap.Hashtable)  # type: ignore[attr-defined]  # remove / reconstruct by seq
        return cls(index, np.zeros(0, dtype=np.int64))

    def __len__(self) -> int:
        return len(self._seqs)

    @property
    def nbytes(self) -> int:
        return len(self._seqs) * (self.dims + 8 + 8) + int(self._index.nlist) * self.dims * 4

    def add(self, seqs: Seqs, units: Units) -> None:
        """Add (or replace) the rows ``seqs`` with vectors ``units``; the caller holds ``lock``."""
        if not len(seqs):
            return
        self.remove(seqs)
        self.changed += len(seqs)
        self._index.add_with_ids(np.ascontiguousarray(units, dtype=np.float32), seqs)
        ordered = np.unique(seqs)  # small: the rows of one write or one catch-up
        # Sorted insertion, one copy (a hashing union of the whole column cost ~100 ms at 100k).
        self._seqs = np.insert(self._seqs, np.searchsorted(self._seqs, ordered), ordered)

    def remove(self, seqs: Seqs) -> None:
        """Take the rows ``seqs`` out (those not here are ignored); the caller holds ``lock``."""
        if not len(self._seqs) or not len(seqs):
            return
        pos = np.minimum(np.searchsorted(self._seqs, seqs), len(self._seqs) - 1)
        here = self._seqs[pos] == seqs
        if here.any():
            self._index.remove_ids(faiss.IDSelectorArray(seqs[here]))
            self._seqs = np.delete(self._seqs, pos[here])
            self.changed += int(here.sum())

    def seqs(self) -> Seqs:
        return self._seqs

    def search(self, vector: Units, count: int, allowed: Seqs | None) -> tuple[Seqs, Any]:
        """The ``count`` nearest rows (seqs, inner products), best first; only rows of
        ``allowed`` when given (None: any). A small ``allowed`` is ranked exactly."""
        with self.lock:
            if allowed is not None and len(allowed) <= max(EXACT_ROWS, count):
                return self._exact(vector, allowed, count)
            params = faiss.SearchParametersIVF()
            params.nprobe = self._probes
            if allowed is not None:
                bits = np.zeros(int(allowed.max()) + 1, dtype=np.bool_)
                bits[allowed] = True
                bitmap = np.packbits(bits, bitorder="little")
                params.sel = faiss.IDSelectorBitmap(len(bits), faiss.swig_ptr(bitmap))
            scores, found = self._index.search(vector.reshape(1, -1), count, params=params)
            hits = found[0] >= 0
            if allowed is not None and hits.sum() < min(count, len(allowed)):
                return self._exact(vector, allowed, count)  # the probed lists held too few
            return found[0][hits].astype(np.int64), scores[0][hits]

    def _exact(self, vector: Units, allowed: Seqs, count: int) -> tuple[Seqs, Any]:
        allowed = allowed[np.isin(allowed, self._seqs)]
        if not len(allowed):
            return allowed, np.zeros(0)
        scores = self._index.reconstruct_batch(allowed) @ vector
        best = np.argsort(-scores, kind="stable")[:count]
        return allowed[best], scores[best]

    # --- on disk -------------------------------------------------------------------------------
    def save(self, path: Path, about: dict[str, Any]) -> None:
        """Write the index (the caller holds ``lock``) to ``path``, a new file: its seqs, the
        faiss index, then the trailer (``about``, its revision, sizes and the SHA-256)."""
        digest = hashlib.sha256()
        with path.open("xb") as out:

            def write(data: bytes) -> int:
                digest.update(data)
                return out.write(data)

            write(self._seqs.astype("<i8").tobytes())
            index_bytes = out.tell()
            faiss.write_index(self._index, faiss.PyCallbackIOWriter(write))  # type: ignore[attr-defined]  # not in its stubs
            index_bytes = out.tell() - index_bytes
            trailer = json.dumps(
                _fingerprint(about, self.dims)
                | {
                    "rev": self.rev,
                    "purged": self.purged,
                    "seqs": len(self._seqs),
                    "index_bytes": index_bytes,
                    "sha256": digest.hexdigest(),
                },
                sort_keys=True,
            ).encode()
            out.write(trailer + TRAILER.pack(len(trailer), MAGIC))

    @classmethod
    def load(cls, path: Path, about: dict[str, Any], dims: int) -> DenseIndex | None:
        """The index saved at ``path`` for ``about`` with ``dims``-d vectors, with the revision
        it reflects; None when there is none, or it is for something else, or is damaged."""
        try:
            with path.open("rb") as file:
                meta = saved_meta(file)
                if meta is None or {k: meta.get(k) for k in _fingerprint(about, dims)} != (
                    _fingerprint(about, dims)
                ):
                    raise ValueError(f"saved for something else: {meta}")
                return cls._read(file, meta)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, RuntimeError, KeyError, TypeError) as exc:
            log.warning("dense index %s not loaded, to be built again: %s", path.name, exc)
            return None

    @classmethod
    def _read(cls, file: BinaryIO, meta: dict[str, Any]) -> DenseIndex:
        seqs_bytes, index_bytes = 8 * int(meta["seqs"]), int(meta["index_bytes"])
        file.seek(0)
        digest = hashlib.sha256()
        for start in range(0, seqs_bytes + index_bytes, CHUNK):
            digest.update(file.read(min(CHUNK, seqs_bytes + index_bytes - start)))
        if digest.hexdigest() != meta["sha256"]:
            raise ValueError("checksum mismatch")
        file.seek(0)
        seqs = np.frombuffer(file.read(seqs_bytes), dtype="<i8").astype(np.int64)
        left = [index_bytes]

        def read(size: int) -> bytes:  # faiss reads its part of the file, no further
            data = file.read(min(size, left[0]))
            left[0] -= len(data)
            return data

        index = faiss.read_index(faiss.PyCallbackIOReader(read))  # type: ignore[attr-defined]  # not in its stubs
        hashed = faiss.DirectMap.Hashtable  # type: ignore[attr-defined]  # not in its stubs
        if (
            not isinstance(index, faiss.IndexIVFScalarQuantizer)
            or index.ntotal != len(seqs)
            or index.direct_map.type != hashed
            or np.any(np.diff(seqs) <= 0)
        ):
            raise ValueError("not the index its trailer describes")
        loaded = cls(index, seqs)
        loaded.rev, loaded.purged = int(meta["rev"]), int(meta["purged"])
        loaded.saved_purged = loaded.purged
        return loaded


def saved_meta(file: BinaryIO) -> dict[str, Any] | None:
    """The trailer of a saved index (what it was saved for, its revision), or None: the file
    is not one (too short, no magic, sizes that do not add up)."""
    size = file.seek(0, os.SEEK_END)
    if size < TRAILER.size:
        return None
    file.seek(size - TRAILER.size)
    length, magic = TRAILER.unpack(file.read(TRAILER.size))
    if magic != MAGIC or length > size - TRAILER.size:
        return None
    file.seek(size - TRAILER.size - length)
    meta = json.loads(file.read(length))
    if not isinstance(meta, dict):
        return None
    body = 8 * int(meta.get("seqs", -1)) + int(meta.get("index_bytes", -1))
    return meta if body + length + TRAILER.size == size else None


def _fingerprint(about: dict[str, Any], dims: int) -> dict[str, Any]:
    return about | {"format": FILE_FORMAT, "dims": dims, "faiss": faiss.__version__}
