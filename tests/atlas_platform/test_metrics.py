"""Prometheus metrics under several server processes: with ``PROMETHEUS_MULTIPROC_DIR`` a
scrape of any process sums every process's counters; gunicorn's hooks (deploy/gunicorn.conf.py)
empty the directory when the arbiter starts and mark an exited worker dead."""

from __future__ import annotations

import os
import runpy
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from atlas_platform import metrics

ROOT = Path(__file__).resolve().parents[2]
COUNT = """
from atlas_platform import metrics
metrics.REQUESTS.labels(route="api/v1/x", method="POST", status="201").inc({n})
metrics.dependency_error("elasticsearch")
"""


def _in_a_worker(directory: Path, n: int) -> None:
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(directory), "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", COUNT.format(n=n)], env=env, check=True, cwd=ROOT)  # noqa: S603


def _value(text: str, prefix: str) -> float:
    lines = [line for line in text.splitlines() if line.startswith(prefix)]
    assert len(lines) == 1, lines
    return float(lines[0].rsplit(" ", 1)[1])


def test_a_scrape_sums_the_counters_of_every_worker_process(tmp_path, monkeypatch):
    _in_a_worker(tmp_path, 3)
    _in_a_worker(tmp_path, 4)
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))

    text = metrics.exposition("atlas_extra_gauge 1\n").decode()

    requests = 'atlas_http_requests_total{method="POST",route="api/v1/x",status="201"}'
    assert _value(text, requests) == 7
    assert _value(text, 'atlas_dependency_errors_total{dependency="elasticsearch"}') == 2
    assert text.endswith("atlas_extra_gauge 1\n")


def test_without_the_directory_a_scrape_is_this_process_alone(tmp_path, monkeypatch):
    _in_a_worker(tmp_path, 5)
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)

    text = metrics.exposition().decode()

    assert 'route="api/v1/x"' not in text


def test_gunicorn_empties_the_directory_at_start_and_marks_an_exited_worker_dead(
    tmp_path, monkeypatch
):
    hooks = runpy.run_path(str(ROOT / "deploy" / "gunicorn.conf.py"))
    directory = tmp_path / "prometheus"
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(directory))
    hooks["on_starting"](None)  # makes the directory
    _in_a_worker(directory, 2)  # an earlier run's values
    assert list(directory.glob("*.db"))

    hooks["on_starting"](None)
    assert not list(directory.glob("*.db"))

    live = directory / "gauge_livesum_4242.db"
    live.write_bytes(b"")
    hooks["child_exit"](None, SimpleNamespace(pid=4242))
    assert not live.exists()
