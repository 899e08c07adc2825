"""Dedicated service processes for the fault-injection suite: an Elasticsearch node (the same
distribution ``deploy/services/up.sh`` installs, on its own ports and data directory), a
``redis-server`` and a PostgreSQL cluster on free ports, and a live Atlas server pointed at
them. These are the only processes the suite kills, freezes and restarts: the shared test
services are never touched.

Elasticsearch and PostgreSQL refuse to run as root: under root they run as the services' user
(``ATLAS_SVC_USER``, as up.sh does).
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
# Where deploy/services/up.sh installs the services (lib.sh's default).
SERVICES_DIR = Path(os.environ.get("ATLAS_SERVICES_DIR", "/var/tmp/atlas-services"))  # noqa: S108
SVC_USER = os.environ.get("ATLAS_SVC_USER", "atlas-svc")
ES_VERSION = os.environ.get("ES_VERSION", os.environ.get("ATLAS_ES_VERSION", "9.5.4"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_service_user(command: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return command
    return ["runuser", "-u", SVC_USER, "--", *command]


def _own(path: Path) -> None:
    if os.geteuid() == 0:
        entry = pwd.getpwnam(SVC_USER)
        for p in [path, *path.rglob("*")]:
            os.chown(p, entry.pw_uid, entry.pw_gid)


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def wait_for(check: Any, *, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(Exception):  # not up yet
            if check():
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not come up within {timeout} s")
        time.sleep(0.2)


class Redis:
    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.workdir = workdir
        self.process: subprocess.Popen[bytes] | None = None

    def url(self, db: int) -> str:
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self) -> None:
        command = [
            shutil.which("redis-server") or "redis-server",
            "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--dir", str(self.workdir),
        ]  # fmt: skip
        log = (self.workdir / "redis.log").open("ab")
        self.process = subprocess.Popen(command, stdout=log, stderr=log)  # noqa: S603
        wait_for(self.ping, timeout=10, what="redis-server")

    def ping(self) -> bool:
        import redis

        return bool(redis.Redis(port=self.port, socket_timeout=0.5).ping())

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None

    def freeze(self) -> None:
        assert self.process is not None
        _signal(self.process.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        if self.process is not None:
            _signal(self.process.pid, signal.SIGCONT)

    def ensure_up(self) -> None:
        self.thaw()
        if self.process is None or self.process.poll() is not None:
            self.start()


class Postgres:
    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.data = workdir / "pg-data"
        self.workdir = workdir
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/postgres"

    def init(self) -> None:
        self.data.mkdir(parents=True)
        _own(self.workdir)
        subprocess.run(  # noqa: S603
            _as_service_user(
                ["initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8"]
            ),
            check=True,
            capture_output=True,
        )

    def start(self) -> None:
        command = _as_service_user(
            [
                "postgres", "-D", str(self.data), "-p", str(self.port),
                "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self.workdir}",
                "-c", "fsync=off",
            ]
        )  # fmt: skip
        log = (self.workdir / "pg.log").open("ab")
        self.process = subprocess.Popen(command, stdout=log, stderr=log)  # noqa: S603
        wait_for(self.ready, timeout=30, what="postgres")

    def ready(self) -> bool:
        import psycopg

        with psycopg.connect(self.url, connect_timeout=1) as conn:
            conn.execute("SELECT 1")
        return True

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(self.url, connect_timeout=3) as conn:
            return list(conn.execute(sql, params).fetchall())

    def kill(self) -> None:
        """Stop the server the hard way (``immediate``: no checkpoint, as a crash)."""
        subprocess.run(  # noqa: S603
            _as_service_user(["pg_ctl", "-D", str(self.data), "stop", "-m", "immediate"]),
            capture_output=True,
        )
        if self.process is not None:
            self.process.wait(timeout=20)
            self.process = None

    def ensure_up(self) -> None:
        if self.process is None or self.process.poll() is not None:
            self.start()


class Elasticsearch:
    """A single node of the integ-test distribution, security off, basic licence (so Atlas
    runs its tenants in ``filter`` isolation), on free ports with its own data directory."""

    def __init__(self, workdir: Path) -> None:
        self.home = SERVICES_DIR / f"elasticsearch-{ES_VERSION}"
        self.port = free_port()
        self.workdir = workdir
        self.pidfile = workdir / "es.pid"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def available(self) -> bool:
        return (self.home / "bin" / "elasticsearch").exists() and bool(self._java())

    def _java(self) -> str:
        found = sorted(glob.glob("/usr/lib/jvm/temurin-25*"))
        return os.environ.get("ATLAS_ES_JAVA_HOME", found[-1] if found else "")

    def start(self) -> None:
        conf = self.workdir / "config"
        if not conf.exists():
            shutil.copytree(self.home / "config", conf)
            (conf / "elasticsearch.keystore").unlink(missing_ok=True)
            (conf / "elasticsearch.yml").write_text(
                "\n".join(
                    [
                        "cluster.name: atlas-faults",
                        "discovery.type: single-node",
                        "network.host: 127.0.0.1",
                        f"http.port: {self.port}",
                        f"transport.port: {free_port()}",
                        f"path.data: {self.workdir / 'data'}",
                        f"path.logs: {self.workdir / 'logs'}",
                        "xpack.security.enabled: false",
                        "xpack.license.self_generated.type: basic",
                        "cluster.routing.allocation.disk.threshold_enabled: false",
                        "action.destructive_requires_name: false",
                        "",
                    ]
                )
            )
            (conf / "jvm.options.d").mkdir(exist_ok=True)
            (conf / "jvm.options.d" / "heap.options").write_text("-Xms384m\n-Xmx384m\n")
            for d in ("data", "logs", "tmp"):
                (self.workdir / d).mkdir(exist_ok=True)
            _own(self.workdir)
        env = {
            **os.environ,
            "ES_JAVA_HOME": self._java(),
            "ES_PATH_CONF": str(conf),
            "ES_TMPDIR": str(self.workdir / "tmp"),
        }
        names = ("ES_JAVA_HOME", "ES_PATH_CONF", "ES_TMPDIR")
        launcher = str(self.home / "bin" / "elasticsearch")
        command = _as_service_user(
            ["env", *(f"{k}={env[k]}" for k in names), launcher, "-d", "-p", str(self.pidfile)]
        )
        with (self.workdir / "startup.out").open("ab") as out:
            done = subprocess.run(command, stdout=out, stderr=out, env=env, check=False)  # noqa: S603
        if done.returncode != 0:
            tail = (self.workdir / "startup.out").read_text()[-3000:]
            raise RuntimeError(f"the dedicated Elasticsearch did not start:\n{tail}")

    def wait(self) -> None:
        wait_for(self.healthy, timeout=150, what="the dedicated Elasticsearch node")

    def healthy(self) -> bool:
        url = f"{self.url}/_cluster/health?wait_for_status=yellow&timeout=1s"
        with urllib.request.urlopen(url, timeout=3) as response:
            return bool(response.status == 200)

    @property
    def pid(self) -> int:
        return int(self.pidfile.read_text().strip())

    def freeze(self) -> None:
        _signal(self.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        with contextlib.suppress(FileNotFoundError, ValueError):
            _signal(self.pid, signal.SIGCONT)

    def stop(self) -> None:
        self.thaw()
        with contextlib.suppress(FileNotFoundError, ValueError):
            _signal(self.pid, signal.SIGTERM)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    os.kill(self.pid, 0)
                except ProcessLookupError:
                    return
                time.sleep(0.2)
            _signal(self.pid, signal.SIGKILL)

    def request(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f"{self.url}{path}", data=data, method=method)
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=10) as response:
            return json.loads(response.read())

    def count(self, index_pattern: str, phrase: str) -> int:
        self.request("POST", f"/{index_pattern}/_refresh")
        query = {"query": {"match_phrase": {"text": phrase}}}
        return int(self.request("POST", f"/{index_pattern}/_count", query)["count"])


class AtlasServer:
    """``uvicorn atlas_server.asgi:application`` on a free port with ``env``."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.port = free_port()
        self.env = env
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        command = [
            sys.executable, "-m", "uvicorn", "atlas_server.asgi:application",
            "--host", "127.0.0.1", "--port", str(self.port), "--no-access-log",
        ]  # fmt: skip
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(  # noqa: S603 - our interpreter, fixed arguments
                command, cwd=ROOT, env=self.env, stdout=out, stderr=out
            )
        wait_for(self._live, timeout=120, what="the Atlas server")

    def _live(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            raise RuntimeError(f"the server exited:\n{self.log.read_text()[-3000:]}")
        with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as response:
            return bool(response.status == 200)

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None

    def ensure_up(self) -> None:
        if self.process is None or self.process.poll() is not None:
            self.start()


def manage(env: dict[str, str], *args: str, timeout: float = 180) -> str:
    """``manage.py`` in a subprocess with ``env`` (the stack's database and services)."""
    done = subprocess.run(  # noqa: S603 - our interpreter, fixed arguments
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"manage.py {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return done.stdout
