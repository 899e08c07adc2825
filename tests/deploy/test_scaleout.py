"""The scale-out run, small (issue 32 item 4): ``deploy/scaleout/run.sh`` with a two-node
Elasticsearch cluster of its own (one replica), Atlas on gunicorn with two workers and two
Celery workers against it, writes and recalls from threads, and the node holding the user's
primary shard killed and started again under the load. Every write acknowledged must be stored
exactly once; the run must reach green again. Its ports, directories, database and Redis
databases are its own (never the shared node)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from tests.conftest import service_missing

ROOT = Path(__file__).resolve().parents[2]
RUN_DIR = "var/scaleout-test"

pytestmark = pytest.mark.services


def test_two_nodes_one_killed_under_writes_lose_and_duplicate_nothing() -> None:
    if not (ROOT / ".services" / "env").is_file() or shutil.which("redis-cli") is None:
        service_missing("the services (.services/env) and redis-cli")
    env = os.environ | {
        "SCALEOUT_NODES": "2",
        "SCALEOUT_DIR": "/var/tmp/atlas-scaleout-test",  # noqa: S108 - as cluster.sh's default
        "SCALEOUT_HTTP_BASE": "29250",
        "SCALEOUT_TRANSPORT_BASE": "29350",
        "SCALEOUT_DB": "atlas_scaleout_test",
        "SCALEOUT_REDIS_DB": "12",
        "SCALEOUT_RUN_DIR": RUN_DIR,
    }
    run = subprocess.Popen(  # noqa: S603 - our own script, fixed arguments
        [
            "/bin/bash",
            "deploy/scaleout/run.sh",
            *("--port", "28760", "--web", "2", "--writers", "2", "--readers", "2"),
            *("--before", "10", "--down", "5", "--after", "5", "--retry-budget", "600"),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = run.communicate(timeout=1200)
    except subprocess.TimeoutExpired:
        # run.sh's trap takes the cluster down; the driver stops what it started.
        os.killpg(run.pid, signal.SIGTERM)
        out, err = run.communicate(timeout=120)
        pytest.fail(f"the scale-out run did not finish in 20 minutes:\n{out[-3000:]}")
    report_file = ROOT / RUN_DIR / "scaleout.json"
    assert report_file.is_file(), out[-3000:] + err[-3000:]
    report = json.loads(report_file.read_text())

    assert report["writes_acknowledged"] > 0
    assert report["acknowledged_lost"] == 0
    assert report["duplicated"] == 0
    assert report["writes_abandoned"] == 0
    assert report["victim"]  # a node was killed, and the cluster came back to green after it
    assert report["seconds_to_green_after_restart"] >= 0
    assert run.returncode == 0, err[-3000:]
