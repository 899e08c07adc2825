"""``manage.py bench_replay``: how fast the ``atlas`` CLI spools offline and how fast a spooled
backlog replays.

    python manage.py bench_replay --backend embedded --backend elasticsearch \\
        --remember 30 --ops 200

- **offline remember**: ``atlas remember`` run ``--remember`` times as a user runs it (the client
  installed from ``clients/cli`` into its own virtual environment, as tests/cli builds it, a
  fresh subprocess each time) with the server unreachable (a closed loopback port); p50 / p90
  of the wall time of each process.
- **replay**: ``--ops`` ``remember`` operations in the spool, then one timed ``atlas sync``
  against a live server (this process serves the API on loopback, on this command's database,
  the memories on each ``--backend``); memory writes/s and operations/s over the sync's wall
  time (the CLI's start-up included). The first batch of each backend warms the models up and
  is not timed.

The command makes a throwaway tenant per backend (``bench_user``) and writes its memories to
a temporary embedded store / the configured cluster; nothing else is touched. Figures, not
assertions; docs/performance.md keeps them.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand
from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
from django.core.wsgi import get_wsgi_application
from django.test.utils import override_settings

from lab.management.commands.bench import bench_user

CLI_SOURCE = Path(settings.BASE_DIR) / "clients" / "cli"
CLOSED = "http://127.0.0.1:9"  # discard: nothing listens on loopback, refused at once


class Command(BaseCommand):
    help = "Offline `atlas remember` latency and replay throughput of a spooled backlog."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--backend", action="append", choices=["embedded", "elasticsearch"], default=[]
        )
        parser.add_argument("--remember", type=int, default=30, help="timed offline runs")
        parser.add_argument(
            "--ops", type=int, default=200, help="spooled writes to replay (0: no replay)"
        )
        parser.add_argument("--cli-source", default=str(CLI_SOURCE), help="the client to build")
        parser.add_argument("--json", default="", help="also write the figures here")

    def handle(self, *args: Any, **o: Any) -> None:
        atlas = cli_bin(Path(o["cli_source"]))
        figures: dict[str, Any] = {"remember": remember_figures(atlas, o["remember"])}
        self.stdout.write(json.dumps({"offline remember": figures["remember"]}))
        for kind in (o["backend"] or ["embedded"]) if o["ops"] else []:
            figures[kind] = replay_figures(atlas, kind, o["ops"])
            self.stdout.write(json.dumps({f"replay {kind}": figures[kind]}))
        if o["json"]:
            Path(o["json"]).write_text(json.dumps(figures, indent=2))


# --- the client, as a user installs it ---------------------------------------------------------
def cli_bin(source: Path) -> Path:
    """``atlas`` from a virtual environment with ``source`` installed (non-editable), cached
    under var/ by the source's digest."""
    digest = hashlib.sha256()
    for path in sorted(source.rglob("*")):
        if path.is_file() and path.suffix in (".py", ".toml") and "build" not in path.parts:
            digest.update(path.relative_to(source).as_posix().encode())
            digest.update(path.read_bytes())
    venv = Path(settings.BASE_DIR) / "var" / f"bench-cli-venv-{digest.hexdigest()[:16]}"
    if not (venv / "bin" / "atlas").exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)  # noqa: S603
        with tempfile.TemporaryDirectory() as scratch:
            copy = Path(scratch) / "cli"
            shutil.copytree(source, copy, ignore=shutil.ignore_patterns("build", "*.egg-info"))
            pip = [str(venv / "bin" / "pip"), "install", "-q", "--no-deps", str(copy)]
            subprocess.run(pip, check=True, timeout=300)  # noqa: S603
    return venv / "bin" / "atlas"


def run(atlas: Path, home: Path, *argv: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    env = {
        "PATH": f"{atlas.parent}:/usr/bin:/bin",
        "HOME": str(home),
        "ATLAS_HOME": str(home / "atlas"),
        "ATLAS_MACHINE_KEY": "bench-machine",
        "ATLAS_NO_BACKGROUND": "1",
        "LANG": "C.UTF-8",
    }
    started = time.perf_counter()
    done = subprocess.run(  # noqa: S603 - the client this command built
        [str(atlas), *argv], capture_output=True, text=True, env=env, cwd=home, timeout=900
    )
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 7):
        raise RuntimeError(f"atlas {' '.join(argv[:2])}: exit {done.returncode}: {done.stderr}")
    return elapsed, done


def login(atlas: Path, home: Path, url: str, user: str, token: str) -> None:
    run(atlas, home, "login", "--no-check", "--url", url, "--user", user, "--token", token)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


# --- offline remember --------------------------------------------------------------------------
def remember_figures(atlas: Path, count: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as scratch:
        home = Path(scratch)
        login(atlas, home, CLOSED, "bench-user", "atlas_bench_offline")
        run(atlas, home, "remember", "note", "warm-up")  # the spool file is made here
        times = [
            run(atlas, home, "remember", "note", f"offline decision {n}")[0] for n in range(count)
        ]
    return {
        "runs": count,
        "p50_s": round(statistics.median(times), 3),
        "p90_s": round(percentile(times, 0.9), 3),
    }


# --- replay ------------------------------------------------------------------------------------
@contextmanager
def live_server() -> Iterator[str]:
    """The API on a loopback port, served by threads of this process."""
    server = ThreadedWSGIServer(("127.0.0.1", 0), QuietHandler, allow_reuse_address=False)
    server.set_app(get_wsgi_application())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def replay_figures(atlas: Path, kind: str, count: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as scratch:
        overrides: dict[str, Any] = {
            "ATLAS_MEMORY_BACKEND": kind,
            "ATLAS_RATE_OPERATIONS": "1000000/min",
            "ALLOWED_HOSTS": ["127.0.0.1", "localhost"],
        }
        if kind == "embedded":
            overrides["ATLAS_EMBEDDED_PATH"] = str(Path(scratch) / "memory.sqlite3")
        with override_settings(**overrides), live_server() as url:
            return _replay(atlas, Path(scratch), url, count)


def _replay(atlas: Path, home: Path, url: str, count: int) -> dict[str, Any]:
    from agents.services.agents import agent_register, agent_token_issue

    user = bench_user("replay")
    agent = agent_register(user=user, slug="claude-code").agent
    token = agent_token_issue(agent=agent, name="bench").secret
    login(atlas, home, url, user.external_id, token)
    run(atlas, home, "remember", "note", "warm the models up")  # delivered: the warm-up
    login(atlas, home, CLOSED, user.external_id, token)
    spool(atlas, home, count)
    login(atlas, home, url, user.external_id, token)
    elapsed, done = run(atlas, home, "sync", "--json", "--budget", "600")
    report = json.loads(done.stdout)
    applied = int(report["applied"])
    return {
        "operations": count,
        "applied": applied,
        "pending": report["pending"],
        "sync_s": round(elapsed, 2),
        "memory_writes_per_s": round(applied / elapsed, 1),
        "ops_per_s": round(report["sent"] / elapsed, 1),
    }


def spool(atlas: Path, home: Path, count: int) -> None:
    """``count`` offline ``remember`` operations: the first through the CLI (it registers the
    project), the rest added to the spool by the client's own ``Spool`` (quicker than one
    process each, the same rows)."""
    run(atlas, home, "remember", "note", "spooled decision 0")
    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from atlas_cli.spool import Spool\n"
        "path = Path(sys.argv[1]); count = int(sys.argv[2])\n"
        "s = Spool(path)\n"
        "(args,) = s.db.execute(\"SELECT args FROM ops WHERE kind = 'memory.write' "
        'ORDER BY seq DESC LIMIT 1").fetchone()\n'
        "base = json.loads(args)\n"
        "for n in range(1, count):\n"
        "    s.add('memory.write', {**base, 'text': f'note: spooled decision {n} about "
        "the cache layer and its eviction policy'})\n"
    )
    python = atlas.parent / "python"
    path = home / "atlas" / "spool" / "default.db"
    command = [str(python), "-c", script, str(path), str(count)]
    subprocess.run(command, check=True, timeout=600)  # noqa: S603 - the client's own python
    os.sync()
