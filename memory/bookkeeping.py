"""Usage bookkeeping off the hot path: recalled semantic facts get ``use_count + 1`` and a fresh
``last_used_at`` on a background thread, so recall never waits for these writes."""

from __future__ import annotations

import concurrent.futures
import logging
from datetime import UTC, datetime

from memory.engine.types import MemoryDoc

logger = logging.getLogger(__name__)
_pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="atlas-usage")
_pending: set[concurrent.futures.Future[None]] = set()


def bump_usage(docs: list[MemoryDoc]) -> None:
    if not docs:
        return
    future = _pool.submit(_bump, docs, datetime.now(UTC))
    _pending.add(future)
    future.add_done_callback(_pending.discard)


def _bump(docs: list[MemoryDoc], when: datetime) -> None:
    from memory.services.common import backend

    store = backend()
    for doc in docs:
        try:
            store.update(
                doc, lambda current: {"use_count": current.use_count + 1, "last_used_at": when}
            )
        except Exception:  # a forgotten fact, a store hiccup: usage is best effort
            logger.warning("usage bump failed", extra={"memory_id": doc.id}, exc_info=True)


def drain(timeout_s: float = 10.0) -> None:
    """Wait for queued bumps (tests and shutdown)."""
    concurrent.futures.wait(list(_pending), timeout=timeout_s)
