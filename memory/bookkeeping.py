"""Usage bookkeeping off the hot path: recalled semantic facts get ``use_count + 1`` and a fresh
``last_used_at``, so recall never waits for these writes.

Recalls only note the hits in a buffer. One background thread flushes the buffer every
``ATLAS_USAGE_FLUSH_S`` seconds (or sooner once ``ATLAS_USAGE_FLUSH_BATCH`` documents wait) as a
single batched write that the store makes visible on its own schedule. A fact recalled ten
times between flushes costs one write with ``count=10``, not ten read-modify-write round trips
each forcing a refresh — under concurrent load those refreshes were most of the cluster's CPU.
"""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime

from django.conf import settings

from memory.engine.types import MemoryDoc, UsageBump

logger = logging.getLogger(__name__)


class UsageBuffer:
    """Pending usage per memory id; a daemon thread flushes it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()  # one flush at a time (thread or drain)
        self._pending: dict[str, UsageBump] = {}
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def add(self, docs: list[MemoryDoc], when: datetime) -> None:
        with self._lock:
            for doc in docs:
                seen = self._pending.get(doc.id)
                count = seen.count + 1 if seen else 1
                self._pending[doc.id] = UsageBump(doc=doc, count=count, last_used_at=when)
            full = len(self._pending) >= settings.ATLAS_USAGE_FLUSH_BATCH
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="atlas-usage", daemon=True)
                self._thread.start()
        if full:
            self._wake.set()

    def flush(self, *, refresh: bool = False) -> int:
        """Write what is pending now; returns how many documents changed."""
        with self._flush_lock:
            with self._lock:
                bumps, self._pending = list(self._pending.values()), {}
            if not bumps:
                return 0
            from memory.services.common import backend

            try:
                store = backend()
                changed = store.record_usage(bumps)
                if refresh:
                    store.sync()
                return changed
            except Exception:  # a store hiccup: usage is best effort, ranking input only
                logger.warning("usage flush failed", extra={"documents": len(bumps)}, exc_info=True)
                return 0

    def _run(self) -> None:
        while True:
            self._wake.wait(timeout=settings.ATLAS_USAGE_FLUSH_S)
            self._wake.clear()
            self.flush()


_buffer = UsageBuffer()


def bump_usage(docs: list[MemoryDoc]) -> None:
    if docs:
        _buffer.add(docs, datetime.now(UTC))


def drain() -> None:
    """Flush pending usage (made visible) and recall statistics now (tests and shutdown)."""
    from memory.services.recall_stats import recall_stats_flush

    _buffer.flush(refresh=True)
    recall_stats_flush()
