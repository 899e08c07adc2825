"""``manage.py loadtest`` against a live server on loopback: it counts what it sends, and a
refused request is an error, not a sample of good latency (figures are printed, never asserted)."""

from __future__ import annotations

import json
import os
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db(transaction=True)


def load(url: str, token: str, tmp_path: Path, **options: Any) -> dict[str, Any]:
    out = tmp_path / "load.json"
    call_command(
        "loadtest",
        url=url,
        token=token,
        user="alice",
        clients="2",
        seconds=1.0,
        turn_every=2,
        json_path=str(out),
        stdout=StringIO(),
        **options,
    )
    runs: list[dict[str, Any]] = json.loads(out.read_text())["runs"]
    return runs[0]


def test_recalls_and_turns_are_sent_and_measured(live_server, store, alice, alice_token, tmp_path):
    run = load(live_server.url, alice_token, tmp_path)

    assert run["requests"] >= 4 and run["errors"] == 0, run["error_samples"]
    assert run["recall_p95_ms"] > 0 and run["turn_p95_ms"] > 0
    assert run["p50_ms"] <= run["p95_ms"] <= run["p99_ms"]
    # The turns really were recorded: each is an episode of alice's now.
    from memory.services.recall import memory_recall

    hits = memory_recall(user=alice, query="note 0-2", memory_types=["episodic"]).hits
    assert any(h.doc.text.startswith("note 0-2:") for h in hits)


def test_refused_requests_count_as_errors(live_server, store, alice, tmp_path):
    run = load(live_server.url, "atlas_not_a_real_token", tmp_path)

    assert run["requests"] > 0 and run["errors"] == run["requests"]
    assert run["error_samples"][0].startswith("401 ")


def test_only_plain_http_urls_are_accepted(store, alice_token, tmp_path):
    with pytest.raises(CommandError, match="http://host:port"):
        load("https://127.0.0.1:1", alice_token, tmp_path)


def test_a_server_that_is_down_counts_errors_without_a_busy_loop(store, alice_token, tmp_path):
    import socket

    with socket.socket() as closed:  # a free port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]

    run = load(f"http://127.0.0.1:{port}", alice_token, tmp_path)

    assert run["requests"] > 0 and run["errors"] == run["requests"]
    assert "ConnectionRefusedError" in run["error_samples"][0]
    # 2 clients for 1 s, each waiting 0.1 s after a refused connection: about 20, not thousands.
    assert run["requests"] <= 40


def test_cpu_per_request_is_reported_for_named_processes(
    live_server, store, alice, alice_token, tmp_path
):
    # The live server is a thread of this process: its CPU is this process's.
    run = load(live_server.url, alice_token, tmp_path, cpu=[f"server={os.getpid()}"])

    assert run["errors"] == 0, run["error_samples"]
    assert set(run["cpu_ms_per_request"]) == {"server", "client"}
    # Every request was served (and embedded) by this process: well above nothing.
    assert run["cpu_ms_per_request"]["server"] > 0.1


@pytest.mark.parametrize("spec", ["server", "server=abc", "=12", "server=999999999"])
def test_a_bad_cpu_process_is_refused(store, alice_token, tmp_path, spec):
    with pytest.raises(CommandError, match="--cpu"):
        load("http://127.0.0.1:1", alice_token, tmp_path, cpu=[spec])
