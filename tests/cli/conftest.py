"""The ``atlas`` CLI as a user runs it: installed from ``clients/cli`` into its own virtual
environment (cached under ``var/``, rebuilt when the client's files change), run as a
subprocess against a live Atlas server on loopback (real PostgreSQL, real Elasticsearch).

``Proxy`` sits between the CLI and the server to make the network misbehave: refuse, hold a
request forever, drop the answer after the server applied the request, or answer slowly.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agents.services.agents import agent_register, agent_token_issue
from memory.services import bookkeeping
from memory.services.recall import memory_recall
from tenants.models import User

ROOT = Path(__file__).resolve().parents[2]
CLI_SOURCE = ROOT / "clients" / "cli"


def _source_digest() -> str:
    h = hashlib.sha256()
    for path in sorted(CLI_SOURCE.rglob("*")):
        if path.is_file() and path.suffix in (".py", ".toml") and "build" not in path.parts:
            h.update(path.relative_to(CLI_SOURCE).as_posix().encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


@pytest.fixture(scope="session")
def atlas_bin() -> Path:
    """The bin/ of a venv with the client installed (non-editable, no server packages)."""
    var = ROOT / "var"
    var.mkdir(exist_ok=True)
    venv = var / f"cli-venv-{_source_digest()}"
    with open(var / "cli-venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (venv / "bin" / "atlas").exists():
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
            with tempfile.TemporaryDirectory() as scratch:  # the build leaves the tree alone
                source = Path(scratch) / "cli"
                shutil.copytree(
                    CLI_SOURCE, source, ignore=shutil.ignore_patterns("build", "*.egg-info")
                )
                subprocess.run(
                    [str(venv / "bin" / "pip"), "install", "-q", "--no-deps", str(source)],
                    check=True,
                    timeout=300,
                )
    return venv / "bin"


@dataclass
class Server:
    url: str
    user: User
    token: str


@pytest.fixture
def server(live_server: Any, es: Any, settings: Any, alice: User) -> Iterator[Server]:
    """A live Atlas on loopback, memories on the real cluster, Alice's claude-code agent
    with a token bound to it."""
    settings.ATLAS_MEMORY_BACKEND = "elasticsearch"
    memory_recall(user=alice, query="warm the models up", k=1)  # the first load is slow
    agent = agent_register(user=alice, slug="claude-code").agent
    token = agent_token_issue(agent=agent, name="laptop").secret
    yield Server(url=live_server.url, user=alice, token=token)
    bookkeeping.drain()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Cli:
    """One machine: its own ATLAS_HOME, machine key and Claude config dir."""

    bin: Path
    home: Path
    machine: str
    url: str
    env_extra: dict[str, str] = field(default_factory=dict)

    def env(self, **extra: str) -> dict[str, str]:
        env = {
            "PATH": f"{self.bin}:/usr/bin:/bin",
            "HOME": str(self.home),
            "ATLAS_HOME": str(self.home / "atlas"),
            "ATLAS_MACHINE_KEY": self.machine,
            "ATLAS_NO_BACKGROUND": "1",
            "ATLAS_BACKOFF_BASE_S": "0.01",
            "CLAUDE_CONFIG_DIR": str(self.home / "claude"),
            "LANG": "C.UTF-8",
        }
        env.update(self.env_extra)
        env.update(extra)
        return env

    def run(
        self,
        *args: str,
        stdin: str | None = None,
        timeout: float = 60,
        cwd: Path | None = None,
        **env: str,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.bin / "atlas"), *args],
            input=stdin if stdin is not None else "",
            capture_output=True,
            text=True,
            timeout=timeout,
            env=self.env(**env),
            cwd=str(cwd or self.home),
        )

    def json(self, *args: str, **kw: Any) -> Any:
        done = self.run(*args, "--json", **kw)
        assert done.stdout.strip(), (done.returncode, done.stderr)
        return json.loads(done.stdout)

    @property
    def spool_file(self) -> Path:
        return self.home / "atlas" / "spool" / "default.db"

    def spool_rows(self) -> list[dict[str, Any]]:
        if not self.spool_file.exists():
            return []
        with sqlite3.connect(self.spool_file) as db:
            if not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'ops'").fetchone():
                return []  # created, its schema not written yet
            db.row_factory = sqlite3.Row
            return [dict(r) for r in db.execute("SELECT * FROM ops ORDER BY seq")]


def make_cli(atlas_bin: Path, tmp: Path, server: Server, machine: str) -> Cli:
    home = tmp / machine
    home.mkdir(parents=True)
    cli = Cli(bin=atlas_bin, home=home, machine=machine, url=server.url)
    done = cli.run(
        "login", "--url", server.url, "--user", server.user.external_id, "--token", server.token
    )
    assert done.returncode == 0, done.stderr
    return cli


@pytest.fixture
def cli(atlas_bin: Path, tmp_path: Path, server: Server) -> Cli:
    return make_cli(atlas_bin, tmp_path, server, "laptop-a")


@pytest.fixture
def two_machines(atlas_bin: Path, tmp_path: Path, server: Server) -> tuple[Cli, Cli, Path, Path]:
    """Laptop A and desktop B, one repository checked out at two paths, two remote spellings."""
    a = make_cli(atlas_bin, tmp_path, server, "laptop-a")
    b = make_cli(atlas_bin, tmp_path, server, "desktop-b")
    repo_a = git_repo(tmp_path / "a-checkout" / "shop", "git@github.com:Acme/Shop.git")
    repo_b = git_repo(tmp_path / "elsewhere" / "shop-clone", "https://github.com/Acme/Shop")
    return a, b, repo_a, repo_b


def git_repo(where: Path, remote: str) -> Path:
    """A checkout with a remote (a .git/config is all the client reads)."""
    (where / ".git").mkdir(parents=True)
    (where / ".git" / "config").write_text(f'[remote "origin"]\n\turl = {remote}\n')
    return where


# --- a misbehaving network --------------------------------------------------------------------
class Proxy:
    """A loopback HTTP proxy to ``upstream`` whose ``mode`` can be changed at any time:
    ``pass``, ``hold`` (never answers, never forwards), ``drop`` (forwards, lets the server
    apply it, then closes without the answer), ``slow`` (waits ``delay`` s, then passes)."""

    def __init__(self, upstream: str) -> None:
        host, port = upstream.split("//", 1)[1].split(":")
        self.upstream = (host, int(port))
        self.mode = "pass"
        self.delay = 10.0
        self.forwarded = 0
        self.dropped = 0
        self.seen: list[bytes] = []  # every request forwarded, as it went over the wire
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(50)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.closed = False
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    @staticmethod
    def _read_request(conn: socket.socket) -> bytes:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return data
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1])
        while len(body) < length:
            chunk = conn.recv(65536)
            if not chunk:
                break
            body += chunk
        return head + b"\r\n\r\n" + body

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            request = self._read_request(conn)
            if not request:  # a connect and close (the client's reachability probe): no request
                return
            mode = self.mode
            if mode == "hold":
                time.sleep(3600)
                return
            if mode == "slow":
                time.sleep(self.delay)
            self.seen.append(request)
            with socket.create_connection(self.upstream) as up:
                up.sendall(request)
                answer = b""
                while True:
                    chunk = up.recv(65536)
                    if not chunk:
                        break
                    answer += chunk
            self.forwarded += 1
            if mode == "drop":
                self.dropped += 1
                return  # the server applied it; the client never hears back
            with contextlib.suppress(OSError):
                conn.sendall(answer)

    def close(self) -> None:
        self.closed = True
        self.sock.close()


@pytest.fixture
def proxy(server: Server) -> Iterator[Proxy]:
    p = Proxy(server.url)
    yield p
    p.close()


def wait_for(predicate: Any, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out waiting")


__all__ = ["Cli", "Proxy", "Server", "free_port", "git_repo", "make_cli", "os", "wait_for"]
