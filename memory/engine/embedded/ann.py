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
"""

from __future__ import annotations

import logging
import math
import threading
from typing import Any

import numpy as np
import numpy.typing as npt

logging.getLogger("faiss.loader").setLevel(logging.WARNING)  # which CPU build it loaded

import faiss  # noqa: E402 - after its loader's log level

# One thread: a server process answers requests in parallel already, and OpenMP's team for an
# add of a few rows cost ~10x the add itself on this busy 2-core machine (spinning waits).
faiss.omp_set_num_threads(1)

MIN_ROWS = 20_000  # below: exact numpy over the snapshot's float32 matrix
EXACT_ROWS = 4_000  # a filter leaving at most this many rows: exact over them
PROBE_SHARE = 0.1  # of the lists searched (nprobe; docs/performance.md: recall@80 by size)
TRAIN_PER_LIST = 40  # training vectors per list (faiss asks for 39 or more)


def sample_size(rows: int) -> int:
    """How many of an owner's ``rows`` vectors train its index: ``2 sqrt(rows)`` lists
    (1,000 for a million, so a search probes ~40 lists of ~1,000 rows)."""
    return min(rows, TRAIN_PER_LIST * max(16, int(2 * math.sqrt(rows))))


Seqs = npt.NDArray[np.int64]
Units = npt.NDArray[np.float32]


class DenseIndex:
    """An owner's unit vectors by seq, searchable by inner product."""

    def __init__(self, dims: int, sample: Units) -> None:
        """Trained on ``sample`` (``sample_size`` of the owner's vectors, spread over them);
        empty until ``add``."""
        lists = max(1, len(sample) // TRAIN_PER_LIST)
        self.dims = dims
        self.rev = 0
        self.purged = 0
        self.lock = threading.Lock()
        self._seqs: Seqs = np.zeros(0, dtype=np.int64)
        quantizer = faiss.IndexFlatIP(dims)
        self._index = faiss.IndexIVFScalarQuantizer(
            quantizer, dims, lists, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT
        )
        self._index.train(np.ascontiguousarray(sample, dtype=np.float32))
        self._index.set_direct_map_type(faiss.DirectMap.Hashtable)  # type: ignore[attr-defined]  # remove / reconstruct by seq
        self._quantizer = quantizer  # faiss does not own it from Python
        self._probes = max(1, math.ceil(lists * PROBE_SHARE))

    def __len__(self) -> int:
        return len(self._seqs)

    @property
    def nbytes(self) -> int:
        return len(self._seqs) * (self.dims + 8 + 8) + self._index.nlist * self.dims * 4

    def add(self, seqs: Seqs, units: Units) -> None:
        """Add (or replace) the rows ``seqs`` with vectors ``units``; the caller holds ``lock``."""
        if not len(seqs):
            return
        self.remove(seqs)
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
