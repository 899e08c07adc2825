"""Group refresh: make writes visible to search with as few refreshes as concurrent writers allow.

Every write must be visible to the next recall (a turn, then a recall of it). Writing with
``refresh=true`` gave each write a refresh of its own: under load the cluster spent more CPU
refreshing (and then merging the one-document segments each refresh leaves) than answering
recalls (docs/performance.md). Here a writer indexes without refreshing, then calls
``GroupRefresh.after_write``, which returns once a refresh that *began after the call* has
finished: that refresh covers the write. Writers who arrive while a refresh is running wait
for it and then share the next one, as a database's group commit shares one log flush.

A lone writer refreshes at once (as ``refresh=true`` did, one round trip later), so nothing
waits for a timer. The grouping is per process; processes do not coordinate (each still
refreshes at most once per group of its own writers).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterable


@dataclasses.dataclass
class _Index:
    started: int = 0  # refreshes begun
    finished: int = 0  # the latest refresh that ended well (they run one at a time, in order)
    running: bool = False


class GroupRefresh:
    def __init__(self, refresh: Callable[[str], None]) -> None:
        self._refresh = refresh
        self._changed = threading.Condition()
        self._indices: dict[str, _Index] = {}

    def after_write(self, indices: Iterable[str]) -> None:
        """Return when everything written to ``indices`` before this call is searchable.

        Raises what the refresh raised if the refresh this caller ran failed. A writer that
        waited on a refresh that failed runs the next one itself, so a failure is never
        mistaken for visibility.
        """
        for index in sorted(set(indices)):
            self._after_write(index)

    def _after_write(self, index: str) -> None:
        with self._changed:
            state = self._indices.setdefault(index, _Index())
            # A refresh running now may have begun before this write: the one after it will not.
            needed = state.started + 1
            while state.finished < needed:
                if state.running:
                    self._changed.wait()
                    continue
                state.running = True
                state.started += 1
                mine = state.started
                ok = False
                self._changed.release()
                try:
                    self._refresh(index)
                    ok = True
                finally:
                    self._changed.acquire()
                    state.running = False
                    if ok:
                        state.finished = mine
                    self._changed.notify_all()
