"""The fault-injection suite's fixtures: a time bound on every test, and (session-wide, shared
by the live tests) a dedicated stack: PostgreSQL, Redis and an Elasticsearch node of their own,
and an Atlas server on them. The suite kills and freezes only these."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from types import FrameType

import pytest

TEST_BOUND_S = 150


@pytest.fixture(autouse=True)
def _bounded() -> Iterator[None]:
    """Fail a test that runs past ``TEST_BOUND_S`` (a hang is a failure, never a stuck run)."""

    def expire(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError(f"the test ran past its {TEST_BOUND_S} s bound")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(TEST_BOUND_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
