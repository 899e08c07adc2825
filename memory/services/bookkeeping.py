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
import threading
from datetime import UTC, datetime

from django.conf import settings

from atlas_platform.flusher import Flusher
from memory.engine.types import MemoryDoc, UsageBump

logger = logging.getLogger(__name__)


def _record(pending: dict[str, UsageBump]) -> int:
    """Write a batch of bumps; returns how many documents changed."""
    from memory.services.common import backend

    bumps = list(pending.values())
    try:
        changed = backend().record_usage(bumps)
        _unseen.set()
        return changed
    except Exception:  # a store hiccup: usage is best effort, ranking input only
        logger.warning("usage flush failed", extra={"documents": len(bumps)}, exc_info=True)
        return 0


# A batch was written and not yet made visible (the store shows it on its own schedule).
_unseen = threading.Event()

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
    from memory.services.common import backend
    from memory.services.recall_stats import recall_stats_flush

    _buffer.flush()
    # Visible: this batch, and also one the background thread wrote just before (it holds the
    # same lock while it writes, so that write has finished by now).
    if _unseen.is_set():
        _unseen.clear()
        try:
            backend().sync()
        except Exception:  # best effort, as the write
            logger.warning("usage refresh failed", exc_info=True)
    recall_stats_flush()
