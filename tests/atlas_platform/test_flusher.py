"""Flusher: merged per key, written in batches by the caller that finds them due or by one
background thread."""

from __future__ import annotations

import threading
from typing import Any

from atlas_platform.flusher import Flusher


def _count(seen: int | None) -> int:
    return (seen or 0) + 1


def test_on_callers_a_due_batch_is_written_once_by_the_caller_that_may_write() -> None:
    batches: list[dict[str, int]] = []
    interval = [3600.0]
    flusher: Flusher[str, int] = Flusher(
        name="t", write=batches.append, interval=lambda: interval[0], background=False
    )

    for key in ("a", "b", "a"):
        flusher.add(key, _count)
    assert batches == []  # not due yet: merged in memory
    interval[0] = 0
    flusher.add("a", _count, may_write=False)  # due, but this caller may not write
    assert batches == []
    flusher.add("c", _count)

    assert batches == [{"a": 3, "b": 1, "c": 1}]
    flusher.add("d", _count)
    assert batches[-1] == {"d": 1}


def test_flush_writes_what_is_pending_with_options_and_discard_drops_it() -> None:
    calls: list[tuple[dict[str, int], dict[str, Any]]] = []

    def write(batch: dict[str, int], **options: Any) -> int:
        calls.append((batch, options))
        return len(batch)

    flusher: Flusher[str, int] = Flusher(
        name="t", write=write, interval=lambda: 3600.0, background=False
    )
    flusher.add("a", _count)

    assert flusher.flush(refresh=True) == 1 and calls == [({"a": 1}, {"refresh": True})]
    assert flusher.flush() is None  # nothing pending: no write
    flusher.add("b", _count)
    flusher.discard()
    assert flusher.flush() is None and len(calls) == 1


def test_in_the_background_a_full_batch_wakes_the_thread() -> None:
    written = threading.Event()
    batches: list[dict[str, int]] = []

    def write(batch: dict[str, int]) -> None:
        batches.append(batch)
        written.set()

    flusher: Flusher[str, int] = Flusher(
        name="t-bg", write=write, interval=lambda: 3600.0, max_pending=lambda: 2, background=True
    )
    flusher.add("a", _count)
    assert not written.wait(timeout=0.2)  # one key, an hour's interval: it waits
    flusher.add("b", _count)

    assert written.wait(timeout=10)
    assert batches == [{"a": 1, "b": 1}]
