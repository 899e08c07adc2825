"""Group refresh: every writer returns after a refresh that began after its write, and writers
who arrive during a refresh share the next one."""

from __future__ import annotations

import threading
import time

import pytest

from memory.engine.elasticsearch.refresh import GroupRefresh


class Cluster:
    """Counts refreshes; each can be held open until the test lets it finish."""

    def __init__(self) -> None:
        self.log: list[tuple[str, int, float]] = []  # ("begin" | "end", number, time)
        self.hold = threading.Event()
        self.hold.set()
        self.fail_next = False
        self.begun = threading.Event()
        self._lock = threading.Lock()

    def refresh(self, index: str) -> None:
        with self._lock:
            number = sum(1 for event, _, _ in self.log if event == "begin") + 1
            self.log.append(("begin", number, time.monotonic()))
            fail, self.fail_next = self.fail_next, False
        self.begun.set()
        self.hold.wait(5)
        if fail:
            raise RuntimeError("refresh failed")
        with self._lock:
            self.log.append(("end", number, time.monotonic()))

    def times(self, event: str) -> list[float]:
        return [at for kind, _, at in self.log if kind == event]


def test_a_lone_writer_refreshes_once_after_it_calls():
    cluster = Cluster()
    refreshes = GroupRefresh(cluster.refresh)
    called = time.monotonic()
    refreshes.after_write(["idx", "idx"])
    assert len(cluster.times("end")) == 1
    assert cluster.times("begin")[0] >= called
    refreshes.after_write(["idx"])
    assert len(cluster.times("end")) == 2  # a later write needs a later refresh


def test_writers_arriving_during_a_refresh_share_the_next_one():
    cluster = Cluster()
    refreshes = GroupRefresh(cluster.refresh)
    cluster.hold.clear()
    first = threading.Thread(target=refreshes.after_write, args=(["idx"],))
    first.start()
    assert cluster.begun.wait(5)  # refresh 1 is running; it may predate the writes below
    returned: list[float] = []

    def write() -> None:
        refreshes.after_write(["idx"])
        returned.append(time.monotonic())

    writers = [threading.Thread(target=write) for _ in range(5)]
    for writer in writers:
        writer.start()
    time.sleep(0.2)  # let them all wait
    cluster.hold.set()
    for thread in [first, *writers]:
        thread.join(5)
    begins, ends = cluster.times("begin"), cluster.times("end")
    assert len(begins) == 2  # not 6
    assert len(returned) == 5
    # Each of the five returned after refresh 2, which began after refresh 1 ended.
    assert begins[1] >= ends[0]
    assert min(returned) >= ends[1]


def test_indices_are_refreshed_apart():
    seen: list[str] = []
    refreshes = GroupRefresh(seen.append)
    refreshes.after_write(["b", "a", "b"])
    assert seen == ["a", "b"]


def test_a_failed_refresh_raises_and_its_waiters_run_another():
    cluster = Cluster()
    refreshes = GroupRefresh(cluster.refresh)
    cluster.hold.clear()
    cluster.fail_next = True
    errors: list[Exception] = []

    def first() -> None:
        try:
            refreshes.after_write(["idx"])
        except RuntimeError as exc:
            errors.append(exc)

    runner = threading.Thread(target=first)
    runner.start()
    assert cluster.begun.wait(5)
    waiter = threading.Thread(target=refreshes.after_write, args=(["idx"],))
    waiter.start()
    time.sleep(0.1)
    cluster.hold.set()
    runner.join(5)
    waiter.join(5)
    assert [str(e) for e in errors] == ["refresh failed"]
    assert not waiter.is_alive()
    assert len(cluster.times("end")) == 1  # the waiter's own refresh, which succeeded


def test_a_lone_writer_whose_refresh_fails_sees_the_error():
    def broken(index: str) -> None:
        raise RuntimeError("cluster down")

    with pytest.raises(RuntimeError, match="cluster down"):
        GroupRefresh(broken).after_write(["idx"])
