"""BLAS threads per process (``settings.ATLAS_BLAS_THREADS``, one by default).

numpy's OpenBLAS starts a thread per core and splits even a small matrix product (a recall's
10k x 384 dense scores) across them; on a busy server the other thread's wake-ups and waits
cost as much CPU as the work itself: one embedded recall at 10k memories took 52.7 ms of CPU
with two BLAS threads and 16.0 ms with one, for no longer a wall time (docs/performance.md).
A server already runs one request per worker on every core, so one thread per product is what
it can use. Applied once at start (``MemoryConfig.ready``) to the BLAS libraries loaded then
(numpy's); faiss loads its own later and only uses BLAS for training and batched searches.
"""

from __future__ import annotations


def blas_threads_limit(threads: int) -> None:
    """Cap the loaded BLAS libraries at ``threads`` threads (0: leave their own default)."""
    if threads <= 0:
        return
    import numpy  # noqa: F401 - loads its BLAS, so the limit reaches it
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=threads, user_api="blas")
