"""Usage bookkeeping off the hot path: recalled semantic facts get ``use_count + 1`` and a fresh
``last_used_at``, so recall never waits for these writes.

Recalls only note the hits in a buffer (``atlas_platform.flusher``). Its background thread
flushes the buffer every ``ATLAS_USAGE_FLUSH_S`` seconds (or sooner once
``ATLAS_USAGE_FLUSH_BATCH`` documents wait) as a single batched write that the store makes
visible on its own schedule. A fact recalled ten
times between flushes costs one write with ``count=10``, not ten read-modify-write round trips
each forcing a refresh — under concurrent load those refreshes were most of the cluster's CPU.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from django.conf import settings

from atlas_platform.flusher import Flusher
from memory.engine.types import MemoryDoc, UsageBump

logger = logging.getLogger(__name__)


def _record(pending: dict[str, UsageBump], *, refresh: bool = False) -> int:
    """Write a batch of bumps; returns how many documents changed."""
    from memory.services.common import backend

    bumps = list(pending.values())
    try:
        store = backend()
        changed = store.record_usage(bumps) if bumps else 0
        if refresh:
            store.sync()
        return changed
    except Exception:  # a store hiccup: usage is best effort, ranking input only
        logger.warning("usage flush failed", extra={"documents": len(bumps)}, exc_info=True)
        return 0


_buffer: Flusher[str, UsageBump] = Flusher(
    name="atlas-usage",
    write=_record,
    interval=lambda: float(settings.ATLAS_USAGE_FLUSH_S),
    max_pending=lambda: int(settings.ATLAS_USAGE_FLUSH_BATCH),
    background=True,
)


def bump_usage(docs: list[MemoryDoc]) -> None:
    """Note one use of each of ``docs`` (now); the background flusher writes them."""
    when = datetime.now(UTC)
    for doc in docs:

        def bumped(seen: UsageBump | None, doc: MemoryDoc = doc) -> UsageBump:
            return UsageBump(doc=doc, count=seen.count + 1 if seen else 1, last_used_at=when)

        _buffer.add(doc.id, bumped)


def drain() -> None:
    """Flush pending usage (made visible) and recall statistics now (tests and shutdown)."""
    from memory.services.recall_stats import recall_stats_flush

    if _buffer.flush(refresh=True) is None:
        # Nothing was pending, but the background thread may have just written the last batch
        # (it waits on the same lock, and writes without making it visible): make that visible.
        _record({}, refresh=True)
    recall_stats_flush()
