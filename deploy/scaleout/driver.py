"""The scale-out run's driver (deploy/scaleout/run.sh starts the cluster, then this).

Against the cluster in ``ATLAS_ES_URL`` (every node listed), with the database in
``DATABASE_URL``: migrate, onboard a tenant with one user and a token, serve Atlas with gunicorn
(``deploy/gunicorn.conf.py``, ``--web`` workers, Prometheus multiprocess mode) and two Celery
workers, then drive writes (each with an ``Idempotency-Key``, retried with the same key on any
failure until acknowledged) and recalls from threads. Mid-load one data node is SIGKILLed
(``cluster.sh kill``), restarted after ``--down`` seconds, and the load goes on until the
cluster is green again and ``--after`` seconds more. Then every document is read back from the
cluster as the administrator: an acknowledged write whose marker is missing is lost, a marker on
two documents is a duplicate. Prints the figures and writes them as JSON (``--json``).
Figures, not assertions: the script exits non-zero only when a write was lost or duplicated.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import os
import random
import re
import secrets
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = [str(ROOT / "deploy" / "scaleout" / "cluster.sh")]
MARKER = re.compile(r"scaleout marker (\w+)-w(\d+)")
QUESTIONS = [
    "what did Sarah do with the blue pot?",
    "when is the dentist visit?",
    "which VPN settings did we use?",
    "how do I reset the Lumio Hub?",
    "where are the winter tyres?",
    "what does my daughter need for school?",
]
WORDS = ["router", "thermostat", "landlord", "garden", "piano", "tyres", "bank", "ticket", "VPN"]


def log(message: str) -> None:
    print(f"[scaleout {time.strftime('%H:%M:%S')}] {message}", flush=True)


# ------------------------------------------------------------------ the cluster, as admin --


class Admin:
    """The cluster as its administrator (health, shards, node stats, the final read-back),
    over whichever listed node answers."""

    def __init__(self) -> None:
        self.urls = os.environ["ATLAS_ES_URL"].split(",")
        pair = f"{os.environ['ATLAS_ES_ADMIN_USERNAME']}:{os.environ['ATLAS_ES_ADMIN_PASSWORD']}"
        self.auth = "Basic " + base64.b64encode(pair.encode()).decode()

    def get(self, path: str, body: Any = None, timeout: float = 10.0, method: str = "") -> Any:
        last: Exception | None = None
        for url in self.urls:
            request = urllib.request.Request(  # noqa: S310 - the cluster's http:// URLs
                url + path,
                data=None if body is None else json.dumps(body).encode(),
                headers={"Authorization": self.auth, "Content-Type": "application/json"},
                method=method or ("GET" if body is None else "POST"),
            )
            try:
                with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
                    return json.loads(response.read() or b"null")
            except OSError as exc:  # a node that is down: ask the next
                last = exc
        raise RuntimeError(f"no node answered {path}: {last}")

    def health(self) -> dict[str, Any]:
        result: dict[str, Any] = self.get("/_cluster/health?timeout=2s", timeout=5)
        return result

    def primary_node(self, index_pattern: str) -> str:
        rows = self.get(f"/_cat/shards/{index_pattern}?format=json&h=index,prirep,node")
        return str(next(row["node"] for row in rows if row["prirep"] == "p"))

    def read_back(self, index_pattern: str) -> list[dict[str, Any]]:
        self.get(f"/{index_pattern}/_refresh", method="POST")
        docs: list[dict[str, Any]] = []
        after: list[Any] | None = None
        while True:
            body: dict[str, Any] = {
                "size": 2000,
                "sort": [{"id": "asc"}],
                "_source": ["id", "text"],
                "query": {"match_all": {}},
            }
            if after:
                body["search_after"] = after
            hits = self.get(f"/{index_pattern}/_search", body=body, timeout=60)["hits"]["hits"]
            if not hits:
                return docs
            docs += [hit["_source"] for hit in hits]
            after = hits[-1]["sort"]


# -------------------------------------------------------------------------- the platform --


def provision() -> tuple[str, str, str]:
    """Migrate, then a tenant with one user and its token: (user external id, token, tenant
    uid)."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "atlas_platform.settings")
    django.setup()
    from django.core.management import call_command

    call_command("migrate", "--noinput", verbosity=0)
    from tenants.services.tenants import tenant_onboard
    from tenants.services.tokens import token_issue

    suffix = secrets.token_hex(3)
    onboarding = tenant_onboard(
        slug=f"scaleout-{suffix}",
        name=f"scaleout {suffix}",
        admin_username=f"scaleout-{suffix}-admin",
        admin_password=f"{secrets.token_urlsafe(18)}-S4le",
        user_external_ids=["load-user"],
    )
    user = onboarding.users[0]
    issued = token_issue(tenant=user.tenant, user=user, name="scaleout")
    return user.external_id, issued.secret, user.tenant.memory_id


def start_processes(args: argparse.Namespace, run_dir: Path) -> list[subprocess.Popen[bytes]]:
    env = {**os.environ, "WEB_CONCURRENCY": str(args.web), "ATLAS_BIND": f"127.0.0.1:{args.port}"}
    env["PROMETHEUS_MULTIPROC_DIR"] = str(run_dir / "prometheus")
    python = sys.executable
    celery = [python, "-m", "celery", "-A", "atlas_platform", "worker", "-l", "INFO"]
    started = [
        subprocess.Popen(  # noqa: S603 - our own commands
            [str(Path(python).parent / "gunicorn"), "-c", "deploy/gunicorn.conf.py"],
            cwd=ROOT,
            env={**env, "LOG_LEVEL": "warning"},
            stdout=(run_dir / "gunicorn.log").open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    ]
    for n in (1, 2):
        started.append(
            subprocess.Popen(  # noqa: S603 - our own commands
                [*celery, "--concurrency=1", "-Q", "atlas,celery", "-n", f"scaleout{n}@%h"],
                cwd=ROOT,
                env=env,
                stdout=(run_dir / f"celery{n}.log").open("wb"),
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
    return started


def stop_processes(started: list[subprocess.Popen[bytes]]) -> None:
    for process in started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
    for process in started:
        try:
            process.wait(timeout=40)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


def wait_ready(port: int, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=3) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(1)
    raise RuntimeError(f"the server on :{port} was not ready within {seconds:.0f}s")


# ------------------------------------------------------------------------------ the load --


class Load:
    """Writer and reader threads; every outcome recorded with the time it happened."""

    def __init__(self, args: argparse.Namespace, user: str, token: str, run: str) -> None:
        self.args, self.user, self.token, self.run = args, user, token, run
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.next_write = 0
        self.acked: dict[int, tuple[str, float]] = {}  # write no. -> (memory id, ack time)
        self.abandoned: list[int] = []  # never acknowledged within the retry budget
        self.write_failures: list[tuple[float, str]] = []  # (time, status) of failed attempts
        self.recalls: list[tuple[float, float, str]] = []  # (time, ms, "ok" | status)
        self.responses: Counter[str] = Counter()  # "write" / "recall" responses received

    def _request(
        self, conn: http.client.HTTPConnection, path: str, body: Any, key: str | None
    ) -> tuple[int, Any]:
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        if key:
            headers["Idempotency-Key"] = key
        conn.request("POST", path, body=json.dumps(body), headers=headers)
        response = conn.getresponse()
        data = response.read()
        return response.status, json.loads(data) if data else None

    def writer(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.args.port, timeout=30)
        while not self.stop.is_set():
            conn = self.write_one(conn)

    def write_one(
        self, conn: http.client.HTTPConnection | None = None
    ) -> http.client.HTTPConnection:
        """One write, retried with its key until acknowledged or out of budget."""
        conn = conn or http.client.HTTPConnection("127.0.0.1", self.args.port, timeout=30)
        path = f"/api/v1/users/{self.user}/memories"
        with self.lock:
            n = self.next_write
            self.next_write += 1
        text = f"scaleout marker {self.run}-w{n:06d}: " + " ".join(random.sample(WORDS, 5))
        body = {"text": text, "memory_type": "semantic"}
        deadline = time.monotonic() + self.args.retry_budget
        while True:
            try:
                status, data = self._request(conn, path, body, f"{self.run}-w{n}")
                with self.lock:
                    self.responses["write"] += 1
                if status in (200, 201):
                    with self.lock:
                        self.acked[n] = (data["id"], time.time())
                    return conn
                outcome = str(status)
            except (OSError, http.client.HTTPException) as exc:
                outcome = type(exc).__name__
                conn.close()
            with self.lock:
                self.write_failures.append((time.time(), outcome))
            if time.monotonic() > deadline:
                with self.lock:
                    self.abandoned.append(n)
                return conn
            time.sleep(0.5)

    def reader(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.args.port, timeout=30)
        rng = random.Random()  # noqa: S311
        path = f"/api/v1/users/{self.user}/recall"
        while not self.stop.is_set():
            started = time.perf_counter()
            try:
                query = {"query": rng.choice(QUESTIONS), "k": 10}
                status, _ = self._request(conn, path, query, None)
                outcome = "ok" if status == 200 else str(status)
                with self.lock:
                    self.responses["recall"] += 1
            except (OSError, http.client.HTTPException) as exc:
                outcome = type(exc).__name__
                conn.close()
            ms = (time.perf_counter() - started) * 1000
            with self.lock:
                self.recalls.append((time.time(), ms, outcome))
            if outcome != "ok":
                time.sleep(0.2)


def phase_of(at: float, marks: dict[str, float]) -> str:
    if at < marks["kill"]:
        return "before"
    if at < marks["green"]:
        return "loss"
    return "after"


def summarise(load: Load, marks: dict[str, float]) -> dict[str, Any]:
    phases: dict[str, Any] = {}
    for phase in ("before", "loss", "after"):
        mine = [r for r in load.recalls if phase_of(r[0], marks) == phase]
        ok = sorted(ms for _, ms, outcome in mine if outcome == "ok")
        start, end = {
            "before": (marks["load"], marks["kill"]),
            "loss": (marks["kill"], marks["green"]),
            "after": (marks["green"], marks["end"]),
        }[phase]
        phases[phase] = {
            "seconds": round(end - start, 1),
            "recalls": len(mine),
            "recall_errors": len(mine) - len(ok),
            "recall_error_kinds": dict(Counter(o for _, _, o in mine if o != "ok")),
            "recall_p50_ms": round(statistics.median(ok), 1) if ok else None,
            "writes_acked": sum(1 for _, at in load.acked.values() if phase_of(at, marks) == phase),
            "write_attempts_failed": sum(
                1 for at, _ in load.write_failures if phase_of(at, marks) == phase
            ),
            "write_failure_kinds": dict(
                Counter(o for at, o in load.write_failures if phase_of(at, marks) == phase)
            ),
        }
    return phases


def metrics_totals(port: int, scrapes: int) -> list[dict[str, int]]:
    """``atlas_http_requests_total`` per route from ``scrapes`` scrapes (answered by whichever
    worker takes the connection): under multiprocess mode every scrape sums every worker."""
    totals = []
    for _ in range(scrapes):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
            text = r.read().decode()
        per_route: Counter[str] = Counter()
        for line in text.splitlines():
            if line.startswith("atlas_http_requests_total{"):
                labels, value = line.rsplit(" ", 1)
                route = re.search(r'route="([^"]*)"', labels)
                name = route.group(1) if route else "?"
                if name.endswith("/memories") or name.endswith("/recall"):
                    per_route[name.rsplit("/", 1)[1]] += int(float(value))
        totals.append(dict(per_route))
    return totals


# -------------------------------------------------------------------------------- the run --


def _stopped(signum: int, frame: object) -> None:
    raise SystemExit(f"stopped by signal {signum}")  # the finally blocks stop what was started


def main() -> int:
    signal.signal(signal.SIGTERM, _stopped)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=28710)
    parser.add_argument("--web", type=int, default=3, help="gunicorn workers")
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--readers", type=int, default=4)
    parser.add_argument("--before", type=float, default=30.0, help="seconds of load, then kill")
    parser.add_argument("--down", type=float, default=30.0, help="seconds the node stays dead")
    parser.add_argument("--after", type=float, default=30.0, help="seconds of load after green")
    parser.add_argument("--retry-budget", type=float, default=180.0)
    parser.add_argument("--run-dir", default="var/scaleout")
    parser.add_argument("--json", dest="json_path", default="var/scaleout/scaleout.json")
    args = parser.parse_args()

    run_dir = ROOT / args.run_dir
    run_dir.mkdir(parents=True, exist_ok=True)
    admin = Admin()
    user, token, tenant_uid = provision()
    index_pattern = f"{os.environ.get('ATLAS_ES_INDEX_PREFIX', 'atlas')}-t-{tenant_uid}*"
    log(f"tenant {tenant_uid}, user {user}; starting gunicorn x{args.web} and 2 Celery workers")
    started = start_processes(args, run_dir)
    report: dict[str, Any] = {"loadavg_start": Path("/proc/loadavg").read_text().split()[:3]}
    load = Load(args, user, token, secrets.token_hex(3))
    threads: list[threading.Thread] = []
    try:
        wait_ready(args.port, 240)
        # The user's index is made by the first write; the kill waits until its replica is
        # in sync (green): a primary lost before that has no copy to promote (red).
        load.write_one()
        admin.get(f"/{index_pattern}/_refresh", method="POST")
        green = f"/_cluster/health/{index_pattern}?wait_for_status=green&timeout=120s"
        admin.get(green, timeout=130)
        threads = [threading.Thread(target=load.writer) for _ in range(args.writers)]
        threads += [threading.Thread(target=load.reader) for _ in range(args.readers)]
        marks = {"load": time.time()}
        for thread in threads:
            thread.start()
        time.sleep(args.before)
        nodes = len(os.environ["ATLAS_ES_URL"].split(","))  # the cluster's, all back again
        victim = admin.primary_node(index_pattern)  # the node with the user's primary shard
        number = victim.rsplit("-", 1)[1]
        subprocess.run([*CLUSTER, "kill", number], check=True)  # noqa: S603
        marks["kill"] = time.time()
        log(f"killed {victim} (held the primary of {index_pattern}); load goes on")
        time.sleep(args.down)
        marks["restart"] = time.time()
        subprocess.run([*CLUSTER, "start", number], check=True)  # noqa: S603
        marks["started"] = time.time()
        log(f"{victim} up again {marks['started'] - marks['restart']:.0f}s after its restart")
        while True:
            try:
                health = admin.health()
                if health["status"] == "green" and health["number_of_nodes"] == nodes:
                    break
            except RuntimeError:
                pass
            time.sleep(0.5)
        marks["green"] = time.time()
        log(f"green {marks['green'] - marks['restart']:.1f}s after the restart")
        time.sleep(args.after)
    finally:
        load.stop.set()
        for thread in threads:
            thread.join(timeout=args.retry_budget + 60)
        marks["end"] = time.time()
        try:
            if "green" in marks:
                report["metrics_scrapes"] = metrics_totals(args.port, 4)
        finally:
            stop_processes(started)

    docs = admin.read_back(index_pattern)
    by_marker: Counter[int] = Counter()
    ids_by_marker: dict[int, set[str]] = {}
    for doc in docs:
        found = MARKER.search(doc.get("text", ""))
        if found and found.group(1) == load.run:
            n = int(found.group(2))
            by_marker[n] += 1
            ids_by_marker.setdefault(n, set()).add(doc["id"])
    lost = [n for n, (mid, _) in load.acked.items() if mid not in ids_by_marker.get(n, set())]
    duplicated = [n for n, count in by_marker.items() if count > 1]
    celery_done = sum(
        (run_dir / f"celery{n}.log").read_text(errors="replace").count(" succeeded in ")
        for n in (1, 2)
    )
    report |= {
        "victim": victim,
        "web_workers": args.web,
        "celery_workers": 2,
        "celery_tasks_succeeded": celery_done,
        "writes_acknowledged": len(load.acked),
        "writes_abandoned": len(load.abandoned),
        "documents_with_marker": sum(by_marker.values()),
        "acknowledged_lost": len(lost),
        "duplicated": len(duplicated),
        "unacknowledged_but_stored": len(set(by_marker) - set(load.acked)),
        "seconds_to_green_after_restart": round(marks["green"] - marks["restart"], 1),
        "seconds_kill_to_green": round(marks["green"] - marks["kill"], 1),
        "seconds_node_start": round(marks["started"] - marks["restart"], 1),
        "phases": summarise(load, marks),
        "driver_responses": dict(load.responses),
        "loadavg_end": Path("/proc/loadavg").read_text().split()[:3],
    }
    print(json.dumps(report, indent=2))
    Path(ROOT / args.json_path).write_text(json.dumps(report, indent=2))
    log(
        f"acknowledged writes {len(load.acked)}: lost {len(lost)}, duplicated {len(duplicated)}; "
        f"recall errors during the loss {report['phases']['loss']['recall_errors']}, after "
        f"{report['phases']['after']['recall_errors']}; green "
        f"{report['seconds_to_green_after_restart']} s after the restart"
    )
    return 1 if lost or duplicated or load.abandoned else 0


if __name__ == "__main__":
    sys.exit(main())
