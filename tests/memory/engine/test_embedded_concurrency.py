"""Several processes writing one embedded store at once: no write lost, no lock error escapes."""

from __future__ import annotations

import multiprocessing
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memory.engine.embedded import EmbeddedBackend
from memory.engine.types import LegQuery, MemoryDoc, Ranking, ReadScope, RecallFilter
from tests.memory.engine.conftest import DIMS, make_doc, vec

WORKERS = 4
ROUNDS = 30
TENANT = "acme"


def counter_doc() -> MemoryDoc:
    moment = datetime(2025, 1, 1, tzinfo=UTC)
    return MemoryDoc(
        id="counter",
        tenant_id=TENANT,
        user_id="alice",
        memory_type="semantic",
        text="a counter",
        created_at=moment,
        timestamp=moment,
        embedding=vec(0),
    )


def recall(backend: EmbeddedBackend, text: str) -> list[str]:
    query = LegQuery(
        text=text, vector=vec(1), filter=RecallFilter(), ranking=Ranking(), now=datetime.now(UTC)
    )
    found = backend.recall_legs(ReadScope(tenant_id=TENANT, user_id="alice"), query)
    return [hit.id for hit in found.lexical]


def work(path: str, worker: int, start: Any, errors: Any) -> None:
    """Each round: write one document, bump the shared counter, write a batch, read; delete
    every third single document again."""
    try:
        backend = EmbeddedBackend(path=Path(path), dims=DIMS)
        backend.ensure_ready()
        start.wait(timeout=60)
        for n in range(ROUNDS):
            single = make_doc(TENANT, "alice", "episodic", f"note w{worker}r{n}", embedding=vec(2))
            backend.write([single])
            backend.update(counter_doc(), lambda current: {"use_count": current.use_count + 1})
            batch = [make_doc(TENANT, "alice", "semantic", f"fact w{worker}r{n}") for _ in range(3)]
            backend.write(batch)
            assert single.id in recall(backend, f"w{worker}r{n}")  # reads its writes
            if n % 3 == 0:
                assert backend.delete(single)
    except BaseException:
        errors.put(f"worker {worker}: {traceback.format_exc()}")


def test_concurrent_processes_lose_no_write(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite3"
    observer = EmbeddedBackend(path=path, dims=DIMS)
    observer.ensure_ready()
    observer.write([counter_doc()])
    assert recall(observer, "note") == []  # caches a snapshot the workers will make stale
    context = multiprocessing.get_context("spawn")
    start, errors = context.Barrier(WORKERS), context.Queue()
    workers = [
        context.Process(target=work, args=(str(path), worker, start, errors))
        for worker in range(WORKERS)
    ]
    for process in workers:
        process.start()
    for process in workers:
        process.join(timeout=120)

    failures = [errors.get() for _ in range(errors.qsize())]
    assert failures == []
    assert [process.exitcode for process in workers] == [0] * WORKERS
    scope = ReadScope(tenant_id=TENANT, user_id="alice")
    counter = observer.get(scope, "counter")
    assert counter is not None and counter.use_count == WORKERS * ROUNDS
    kept_singles = WORKERS * (ROUNDS - len(range(0, ROUNDS, 3)))
    counts = observer.count(scope)
    assert counts["episodic"] == kept_singles
    assert counts["semantic"] == 1 + WORKERS * ROUNDS * 3
    for worker, n in [(worker, n) for worker in range(WORKERS) for n in range(3)]:
        found = observer.get_many(scope, recall(observer, f"w{worker}r{n}"))
        kept = {f"fact w{worker}r{n}", f"note w{worker}r{n}"}
        if n % 3 == 0:  # deleted, and so gone from the full-text index too
            kept.remove(f"note w{worker}r{n}")
        assert {doc.text for doc in found} == kept
