"""Batches counted in memory and written together: the one background flusher.

A hot path notes what it saw (``add``: merged per key, under a lock, in microseconds) instead of
writing it; ``write`` later receives everything pending at once. When a batch is written:

- ``background=True``: by one daemon thread, every ``interval`` seconds or as soon as
  ``max_pending`` keys wait, so no caller ever waits for the write;
- ``background=False``: by the ``add`` that finds the batch due (``interval`` seconds since the
  last write) and is allowed to write (``may_write``), on the caller's thread: no thread holds
  a database connection of its own.

``flush()`` writes what is pending now (tests, shutdown; ``at_exit`` also on interpreter exit),
``discard()`` drops it. A failed write is the writer's to log: a batch is a metric or ranking
input, never anyone's data, so a crash loses at most one interval of it.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")
logger = logging.getLogger(__name__)


class Flusher(Generic[K, V]):
    """Pending values per key, written in batches by ``write`` (see the module docstring)."""

    def __init__(
        self,
        *,
        name: str,
        write: Callable[..., Any],
        interval: Callable[[], float],
        max_pending: Callable[[], int] | None = None,
        background: bool,
        at_exit: bool = False,
    ) -> None:
        self.name = name
        self._write, self._interval, self._max_pending = write, interval, max_pending
        self._background = background
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()  # one write at a time (thread, caller or drain)
        self._pending: dict[K, V] = {}
        self._since = time.monotonic()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        if at_exit:
            atexit.register(self._flush_at_exit)

    def add(self, key: K, merge: Callable[[V | None], V], *, may_write: bool = True) -> None:
        """Merge one observation into ``key``'s pending value (``merge(None)`` for a new key).
        A flusher that writes on callers writes the batch now if it is due and ``may_write``:
        exactly one caller takes a due batch, the others go on at once."""
        with self._lock:
            self._pending[key] = merge(self._pending.get(key))
            full = self._max_pending is not None and len(self._pending) >= self._max_pending()
            due = full or time.monotonic() - self._since >= self._interval()
            if self._background:
                self._ensure_thread()
                batch: dict[K, V] = {}
            else:
                batch = self._take() if due and may_write else {}
        if self._background and full:
            self._wake.set()
        elif batch:
            self._write(batch)

    def flush(self, **options: Any) -> Any:
        """Write everything pending now (``options`` go to ``write``); returns what ``write``
        returned, or None when nothing was pending."""
        with self._flush_lock:
            batch = self.take()
            return self._write(batch, **options) if batch else None

    def take(self) -> dict[K, V]:
        """Everything pending, removed (the caller writes it, or drops it)."""
        with self._lock:
            return self._take()

    def discard(self) -> None:
        """Drop what is pending, unwritten."""
        self.take()

    def _take(self) -> dict[K, V]:
        batch, self._pending, self._since = self._pending, {}, time.monotonic()
        return batch

    def _ensure_thread(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            self._wake.wait(timeout=self._interval())
            self._wake.clear()
            try:
                self.flush()
            except Exception:  # the writer should have logged; the thread must live on
                logger.exception("%s: batch not written", self.name)

    def _flush_at_exit(self) -> None:
        try:
            self.flush()
        except Exception:  # the interpreter is going away; the database may be too
            logger.warning("%s: batch lost at exit", self.name, exc_info=True)
