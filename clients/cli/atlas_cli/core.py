"""What every command shares: the profile, the HTTP client, the spool, the project, and the
two paths a command takes: a write (spooled first, then delivered within a budget) and a read
(online only: offline is a clear non-zero exit)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from atlas_cli import config
from atlas_cli.api import Client, HttpError, Offline
from atlas_cli.project import Project, resolve
from atlas_cli.spool import Report, Spool

# Exit codes (docs/cli.md): the same for every command.
OK = 0
ERROR = 1
USAGE = 2
OFFLINE = 3
AUTH = 4
REFUSED = 5
SPOOL = 6
PENDING = 7  # `atlas sync` ended with operations still pending (throttled, budget, server error)


class Failure(Exception):
    def __init__(self, message: str, code: int = ERROR, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.data = data


@dataclass
class Context:
    profile: config.Profile
    timeout: float = 10.0
    _spool: Spool | None = field(default=None, repr=False)
    _project: Project | None = field(default=None, repr=False)

    @property
    def client(self) -> Client:
        return Client(self.profile, timeout=self.timeout)

    @property
    def spool(self) -> Spool:
        if self._spool is None:
            self._spool = Spool(self.profile.spool_path)
        return self._spool

    @property
    def project(self) -> Project:
        if self._project is None:
            self._project = resolve()
        return self._project

    def close(self) -> None:
        if self._spool is not None:
            self._spool.close()

    # --- writes -----------------------------------------------------------------------
    def register_project(self) -> str:
        """Spool the project's registration once per spool (idempotent on the server)."""
        marker = f"project:{self.project.key}"
        if self.spool.get(marker) is None:
            self.spool.add("project.register", self.project.register_args())
            self.spool.put(marker, "1")
        return self.project.key

    def write(
        self, kind: str, args: dict[str, Any], *, budget_s: float | None = None
    ) -> tuple[str, Report | None]:
        """Spool the operation, then try to deliver within ``budget_s`` (None: the client
        timeout; 0: do not try now). Never fails because the server is away."""
        op_id = self.spool.add(kind, args)
        budget = self.timeout if budget_s is None else budget_s
        report = self.deliver(budget) if budget > 0 else None
        return op_id, report

    def deliver(
        self, budget_s: float, *, ignore_backoff: bool = True, call_timeout: float | None = None
    ) -> Report:
        from atlas_cli.memsync import on_result

        per_call = self.timeout if call_timeout is None else call_timeout
        client = Client(self.profile, timeout=min(per_call, max(0.1, budget_s)))
        return self.spool.deliver(
            client, budget_s=budget_s, ignore_backoff=ignore_backoff, on_result=on_result
        )

    def outcome(self, op_id: str) -> dict[str, Any]:
        row = self.spool.row(op_id) or {}
        return {
            "operation_id": op_id,
            "state": row.get("state"),
            "status": row.get("status"),
            "result": json.loads(row["result"]) if row.get("result") else None,
            "error": json.loads(row["error"]) if row.get("error") else None,
        }


# A command run with a profile: its parsed arguments and the Context; its exit code.
Command = Callable[[argparse.Namespace, Context], int]


def read(ctx: Context, method: str, rest: str, body: Any = None, **query: Any) -> Any:
    """A read of the user's resources: the server's answer, or a ``Failure`` that exits 3
    offline, 4 for a refused token, 5 for another refusal."""
    client = ctx.client
    try:
        return client.call(method, client.user_path(rest), body, query=query or None)
    except Offline as exc:
        raise Failure(f"offline: {exc} (reads need the server)", OFFLINE) from None
    except HttpError as exc:
        code = AUTH if exc.status in (401, 403) else REFUSED if exc.status < 500 else ERROR
        raise Failure(f"{exc.status} {exc.code}: {exc.message}", code, exc.body) from None


def background_sync(profile: str) -> None:
    """Deliver the spool in a detached process (the hook returns at once)."""
    if os.environ.get("ATLAS_NO_BACKGROUND"):
        return
    import subprocess  # here alone: ~4 ms of every command's start-up otherwise

    command = [
        sys.executable,
        "-m",
        "atlas_cli",
        "--profile",
        profile,
        "sync",
        "--quiet",
        "--background",
    ]
    with open(os.devnull, "wb") as null:
        subprocess.Popen(  # noqa: S603
            command,
            stdin=subprocess.DEVNULL,
            stdout=null,
            stderr=null,
            start_new_session=True,
            close_fds=True,
            cwd=str(Path.home()),
        )
