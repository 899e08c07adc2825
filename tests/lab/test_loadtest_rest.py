"""``manage.py loadtest`` (REST) against a live server on loopback: it counts what it sends, and a
refused request is an error, not a sample of good latency (figures are printed, never asserted)."""

from __future__ import annotations

import json
import os
import socket
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db(transaction=True)


def report(url: str, token: str, tmp_path: Path, **options: Any) -> dict[str, Any]:
    """What ``loadtest`` wrote with ``--json`` (as alice; 2 clients for 1 s unless told)."""
    out = tmp_path / "load.json"
    given: dict[str, Any] = {"clients": "2", "seconds": 1.0, "turn_every": 2, **options}
    call_command(
        "loadtest",
        url=url,
        token=token,
        user="alice",
        json_path=str(out),
        stdout=StringIO(),
        **given,
    )
    written: dict[str, Any] = json.loads(out.read_text())
    return written


def load(url: str, token: str, tmp_path: Path, **options: Any) -> dict[str, Any]:
    run: dict[str, Any] = report(url, token, tmp_path, **options)["runs"][0]
    return run


def free_port() -> int:
    with socket.socket() as closed:  # nothing listens on it once the socket is closed
        closed.bind(("127.0.0.1", 0))
        port: int = closed.getsockname()[1]
    return port


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
    run = load(f"http://127.0.0.1:{free_port()}", alice_token, tmp_path)

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


def compare(url: str, against: str, token: str, tmp_path: Path, rounds: int) -> dict[str, Any]:
    return report(
        url,
        token,
        tmp_path,
        against=against,
        rounds=rounds,
        clients="1",
        seconds=0.5,
        turn_every=1000,
    )


def test_a_comparison_alternates_the_two_servers_round_by_round(
    live_server, store, alice, alice_token, tmp_path
):
    down = f"http://127.0.0.1:{free_port()}"

    compared = compare(live_server.url, down, alice_token, tmp_path, rounds=3)

    order = [(r["round"], r["server"]) for r in compared["runs"]]
    assert order == [(1, "A"), (1, "B"), (2, "B"), (2, "A"), (3, "A"), (3, "B")]
    served = [r for r in compared["runs"] if r["server"] == "A"]
    refused = [r for r in compared["runs"] if r["server"] == "B"]
    assert all(r["errors"] == 0 and r["recall_p95_ms"] > 0 for r in served)
    assert all(r["errors"] == r["requests"] > 0 for r in refused)
    [summary] = compared["comparisons"]
    assert summary["rounds"] == 3 and summary["clients"] == 1
    assert summary["A"]["errors"] == 0 and summary["B"]["errors"] == sum(
        r["errors"] for r in refused
    )
    # A refused request is quick: B's rounds are left out, not counted as faster.
    assert summary["compared_rounds"] == 0 and summary["b_lower_rounds"] == 0
    assert summary["B"]["recall_p95_ms"] is None and summary["A"]["recall_p95_ms"] > 0


def test_a_comparison_counts_the_rounds_each_side_was_faster(
    live_server, store, alice, alice_token, tmp_path
):
    compared = compare(live_server.url, live_server.url, alice_token, tmp_path, rounds=2)

    [summary] = compared["comparisons"]
    assert summary["compared_rounds"] == 2
    by_round = {(r["round"], r["server"]): r["recall_p95_ms"] for r in compared["runs"]}
    expected = sum(by_round[(n, "B")] < by_round[(n, "A")] for n in (1, 2))
    assert summary["b_lower_rounds"] == expected
    a_p95 = sorted(by_round[(n, "A")] for n in (1, 2))
    assert summary["A"]["recall_p95_ms"] == pytest.approx(sum(a_p95) / 2, abs=0.01)


def test_a_comparison_needs_a_round(store, alice_token, tmp_path):
    with pytest.raises(CommandError, match="--rounds"):
        compare("http://127.0.0.1:1", "http://127.0.0.1:2", alice_token, tmp_path, rounds=0)


def test_the_summary_counts_rounds_b_was_lower_and_leaves_out_runs_with_errors() -> None:
    from lab.management.commands.loadtest import _comparison

    def run(n: int, side: str, p95: float, rps: float, errors: int = 0) -> dict[str, Any]:
        return {"round": n, "server": side, "recall_p95_ms": p95, "rps": rps, "errors": errors}

    runs = [
        run(1, "A", 200.0, 50.0),
        run(1, "B", 150.0, 60.0),
        run(2, "B", 170.0, 58.0),
        run(2, "A", 180.0, 52.0),
        run(3, "A", 160.0, 55.0),
        run(3, "B", 190.0, 54.0),
        run(4, "A", 300.0, 40.0),
        run(4, "B", 5.0, 900.0, errors=3),  # quick because refused: not a faster round
    ]

    summary = _comparison(runs, 8)

    assert (summary["rounds"], summary["compared_rounds"], summary["b_lower_rounds"]) == (4, 3, 2)
    assert summary["A"] == {"recall_p95_ms": 190.0, "rps": 51.0, "errors": 0}
    assert summary["B"] == {"recall_p95_ms": 170.0, "rps": 58.0, "errors": 3}
