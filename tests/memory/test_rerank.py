"""The reranker runs within its budget; on failure or timeout recall keeps the fused order.

The rerank model is the one thing faked, at its HTTP boundary: a rerank server on loopback.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from memory.plans import RecallPlan
from memory.rerank import HttpReranker, default_reranker, rerank
from memory.services.recall import memory_recall
from memory.services.writes import memory_write


class FakeRerankServer:
    """Scores passages by how many query words they contain, reversed if asked; or misbehaves."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.calls = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                outer.calls += 1
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if outer.mode == "slow":
                    time.sleep(1.0)
                if outer.mode == "error":
                    self.send_response(500)
                    self.end_headers()
                    return
                words = set(body["query"].lower().split())
                results = [
                    {
                        "index": i,
                        "relevance_score": len(words & set(doc.lower().split())) + i / 1000,
                    }
                    for i, doc in enumerate(body["documents"])
                ]
                payload = json.dumps({"results": results}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/rerank"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def fake_reranker(settings) -> Iterator[FakeRerankServer]:
    server = FakeRerankServer()
    settings.ATLAS_RERANKING = dataclasses.replace(
        settings.ATLAS_RERANKING, kind="http", url=server.url
    )
    settings.ATLAS_RECALL = dataclasses.replace(settings.ATLAS_RECALL, rerank_budget_ms=300)
    default_reranker.cache_clear()
    yield server
    server.server.shutdown()
    default_reranker.cache_clear()


def test_the_reranker_reorders_the_pool(fake_reranker):
    outcome = rerank(
        HttpReranker(url=fake_reranker.url),
        "blue pot key",
        ["a tree", "the key under the blue pot"],
        budget_ms=2000,
    )

    assert outcome.reranked and outcome.order == [1, 0]


@pytest.mark.parametrize("mode", ["slow", "error"])
def test_a_failing_or_slow_reranker_keeps_the_fused_order(people, fake_reranker, mode):
    for text in (
        "The spare key is under the blue pot",
        "The blue car is parked outside",
        "Keys are cut at the kiosk",
    ):
        memory_write(user=people.alice, text=text, memory_type="semantic")
    fused = memory_recall(
        user=people.alice, query="where is the spare key", plan=RecallPlan(rerank=False)
    )
    fake_reranker.mode = mode

    started = time.perf_counter()
    result = memory_recall(user=people.alice, query="where is the spare key")

    assert result.reranked is False and (result.reranker or "").startswith("http:")
    assert [h.doc.id for h in result.hits] == [h.doc.id for h in fused.hits]
    assert fake_reranker.calls == 1
    assert time.perf_counter() - started < 5  # the budget bounds the wait, not the slow server


def test_a_working_reranker_is_reported(people, fake_reranker, settings):
    # A working reranker answers well within any budget; a wide one keeps a busy machine's
    # scheduling from turning this into a timeout test (the slow case above is that one).
    settings.ATLAS_RECALL = dataclasses.replace(settings.ATLAS_RECALL, rerank_budget_ms=30_000)
    memory_write(
        user=people.alice, text="The spare key is under the blue pot", memory_type="semantic"
    )

    result = memory_recall(user=people.alice, query="spare key blue pot")

    assert result.reranked is True
    assert result.timings_ms["rerank_ms"] > 0
    assert result.legs == ["lexical", "dense"]
