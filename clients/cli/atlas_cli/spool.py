"""The durable offline spool: every write is recorded here *before* the network, then
delivered in batches to ``POST /users/{user}/operations``.

One SQLite file per profile (owner-only, WAL, ``synchronous=FULL``: a write that returned is on
disk; delivery's own bookkeeping is committed without a sync of its own, see ``Spool.tx``).
Each operation has a client operation id (its exactly-once key on the server) and the hash of
its payload (a payload changed on disk is quarantined, never sent). The server's answer
for each operation decides what happens to it:

- ``applied`` / ``duplicate``: done (a duplicate is a replay the server had already applied,
  e.g. after a timeout that came after the request was sent);
- ``conflict``: done, and reported (the server's state is kept in ``error``);
- ``rejected``: quarantined with the reason (``atlas spool show/retry/drop``);
- ``retry`` or no answer: pending again, after a backoff with jitter;
- a whole batch answered 400 / 413 / 500 (the server could not parse, or failed on, one of
  its operations): each is sent alone, so only that one is quarantined (400, 413) or waits
  (500: backoff, the server may be fixed) and the others are delivered;
- a revoked or invalid token (401/403): delivery stops and says so; nothing is dropped.

One bad operation never blocks the others. A spool file that is not a readable SQLite database
is set aside (``<name>.corrupt-<time>``) and a new one started, with a warning. The size bound
(``ATLAS_SPOOL_MAX_MB``, 256 MB) refuses a new write loudly (``SpoolFull``), the same as a full
disk: nothing already spooled is ever dropped to make room.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import random
import sqlite3
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from atlas_cli.api import Client, HttpError, Offline

BATCH = 100
BACKOFF_CAP_S = 300.0
DONE_KEPT_S = 7 * 86400
SCHEMA = """
CREATE TABLE IF NOT EXISTS ops (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    args TEXT NOT NULL,
    hash TEXT NOT NULL,
    created_at REAL NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending',
    attempts INTEGER NOT NULL DEFAULT 0,
    next_at REAL NOT NULL DEFAULT 0,
    sent_at REAL,
    done_at REAL,
    status TEXT,
    error TEXT,
    result TEXT
);
CREATE INDEX IF NOT EXISTS ops_state ON ops (state, seq);
CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS memfiles (
    project_key TEXT NOT NULL,
    path TEXT NOT NULL,
    base_hash TEXT,
    sent_hash TEXT,
    conflict_hash TEXT,
    conflict_file TEXT,
    conflict_machine TEXT,
    PRIMARY KEY (project_key, path)
);
CREATE TABLE IF NOT EXISTS entities (
    project_key TEXT NOT NULL,
    path TEXT NOT NULL,
    version INTEGER,
    PRIMARY KEY (project_key, path)
);
"""
HEADER = b"SQLite format 3\x00"
# Columns added since a spool's table was first made: (table, column, type).
ADDED_COLUMNS = (("memfiles", "conflict_file", "TEXT"), ("memfiles", "conflict_machine", "TEXT"))


def upgrade(db: sqlite3.Connection) -> None:
    """Add the columns an older spool's tables lack (nothing is rewritten)."""
    for table, column, kind in ADDED_COLUMNS:
        have = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        if column not in have:
            db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")


class SpoolError(Exception):
    """The spool cannot take the write (disk full, size bound, unreadable): said loudly."""


class SpoolFull(SpoolError):
    pass


def payload_hash(kind: str, args: Any) -> str:
    canonical = json.dumps([kind, args], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def new_id() -> str:
    return f"cli-{uuid.uuid4().hex}"


def warn(message: str) -> None:
    print(f"atlas: {message}", file=sys.stderr)


@dataclass
class Report:
    """What one delivery did, per status, plus why it stopped early (if it did)."""

    sent: int = 0
    applied: int = 0
    duplicate: int = 0
    conflict: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    retry: int = 0
    pending: int = 0
    stopped: str | None = None
    auth_failed: bool = False
    busy: bool = False
    throttled: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "sent": self.sent,
            "applied": self.applied,
            "duplicate": self.duplicate,
            "conflict": self.conflict,
            "rejected": self.rejected,
            "retry": self.retry,
            "pending": self.pending,
            "stopped": self.stopped,
            "auth_failed": self.auth_failed,
            "busy": self.busy,
            "throttled": self.throttled,
        }


class Spool:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.db = self._open()

    # --- opening, corruption ------------------------------------------------------------
    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            if self.path.exists() and self.path.stat().st_size > 0:
                with self.path.open("rb") as handle:
                    if handle.read(16) != HEADER:
                        raise sqlite3.DatabaseError("not a SQLite file")
            db = self._connect()
            row = db.execute("PRAGMA quick_check").fetchone()
            if row is None or row[0] != "ok":
                db.close()
                raise sqlite3.DatabaseError(f"quick_check: {row[0] if row else 'no answer'}")
            db.executescript(SCHEMA)
            upgrade(db)
            return db
        except sqlite3.DatabaseError as exc:
            if "full" in str(exc).lower() or "locked" in str(exc).lower():
                raise SpoolError(f"spool {self.path}: {exc}") from exc
            aside = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
            for suffix in ("", "-wal", "-shm"):
                source = Path(f"{self.path}{suffix}")
                if source.exists():
                    os.replace(source, Path(f"{aside}{suffix}"))
            warn(
                f"the spool {self.path} was unreadable ({exc}); set aside as {aside.name}, "
                "a new spool started"
            )
            db = self._connect()
            db.executescript(SCHEMA)
            return db

    def _connect(self) -> sqlite3.Connection:
        fresh = not self.path.exists()
        if fresh:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o600)
            os.close(fd)
        db = sqlite3.connect(self.path, timeout=10.0, isolation_level=None)
        db.execute("PRAGMA busy_timeout = 10000")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = FULL")
        page = db.execute("PRAGMA page_size").fetchone()[0]
        limit_mb = float(os.environ.get("ATLAS_SPOOL_MAX_MB", "256"))
        db.execute(f"PRAGMA max_page_count = {max(8, int(limit_mb * 1024 * 1024 / page))}")
        return db

    def close(self) -> None:
        self.db.close()

    @contextlib.contextmanager
    def tx(self, *, durable: bool = True) -> Iterator[sqlite3.Connection]:
        """One write transaction. ``durable`` (the default): on disk when it commits (the WAL
        synced). ``durable=False`` for delivery's own bookkeeping (attempts, backoff, what the
        server answered): committed, but synced only with the next durable commit or
        checkpoint, so a power cut may forget it, never an operation: the operation is sent
        again, and the server answers the replay ``duplicate`` (its ledger keys it by id)."""
        if not durable:
            self.db.execute("PRAGMA synchronous = NORMAL")
        try:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                yield self.db
            except BaseException:
                if self.db.in_transaction:  # SQLite may have rolled back already (a full disk)
                    self.db.execute("ROLLBACK")
                raise
            self.db.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            text = str(exc).lower()
            if self.db.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    self.db.execute("ROLLBACK")
            if "full" in text:
                raise SpoolFull(
                    f"the spool {self.path} is full ({exc}): the write was NOT recorded; free "
                    "disk space or raise ATLAS_SPOOL_MAX_MB, then run it again"
                ) from exc
            raise SpoolError(f"spool {self.path}: {exc}") from exc
        finally:
            if not durable:
                self.db.execute("PRAGMA synchronous = FULL")

    # --- writing ------------------------------------------------------------------------
    def add(self, kind: str, args: dict[str, Any], op_id: str | None = None) -> str:
        """Record one operation (durable when this returns); its id."""
        op_id = op_id or new_id()
        text = json.dumps(args, sort_keys=True, separators=(",", ":"))
        with self.tx() as db:
            db.execute(
                "INSERT INTO ops (id, kind, args, hash, created_at) VALUES (?, ?, ?, ?, ?)",
                (op_id, kind, text, payload_hash(kind, args), time.time()),
            )
        return op_id

    def get(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM kv WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def put(self, key: str, value: str) -> None:
        with self.tx() as db:
            db.execute("INSERT OR REPLACE INTO kv (key, value) VALUES (?, ?)", (key, value))

    # --- reading ------------------------------------------------------------------------
    def rows(
        self, states: tuple[str, ...] | None = None, limit: int = 1000
    ) -> list[dict[str, Any]]:
        sql = "SELECT * FROM ops"
        params: list[Any] = []
        if states:
            sql += f" WHERE state IN ({','.join('?' * len(states))})"
            params.extend(states)
        sql += " ORDER BY seq LIMIT ?"
        params.append(limit)
        cursor = self.db.execute(sql, params)
        names = [c[0] for c in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def row(self, op_id: str) -> dict[str, Any] | None:
        cursor = self.db.execute("SELECT * FROM ops WHERE id = ? OR seq = ?", (op_id, op_id))
        found = cursor.fetchone()
        if found is None:
            return None
        return dict(zip([c[0] for c in cursor.description], found, strict=True))

    def counts(self) -> dict[str, int]:
        found = dict(self.db.execute("SELECT state, COUNT(*) FROM ops GROUP BY state").fetchall())
        return {s: int(found.get(s, 0)) for s in ("pending", "done", "conflict", "quarantined")}

    def refused_recently(self, *, exclude_prefix: str = "") -> int:
        """Operations the server answered ``conflict`` to, still kept (``DONE_KEPT_S``), but
        for kinds starting with ``exclude_prefix`` (memory files: their own open conflicts)."""
        (count,) = self.db.execute(
            "SELECT COUNT(*) FROM ops WHERE state = 'conflict' AND substr(kind, 1, ?) != ?",
            (len(exclude_prefix), exclude_prefix),
        ).fetchone()
        return int(count)

    def retry(self, op_id: str | None) -> int:
        with self.tx() as db:
            if op_id is None:
                cur = db.execute(
                    "UPDATE ops SET state='pending', next_at=0, attempts=0 "
                    "WHERE state IN ('quarantined', 'pending')"
                )
            else:
                cur = db.execute(
                    "UPDATE ops SET state='pending', next_at=0 WHERE (id = ? OR seq = ?) "
                    "AND state IN ('quarantined', 'pending')",
                    (op_id, op_id),
                )
            return cur.rowcount

    def drop(self, op_id: str) -> int:
        with self.tx() as db:
            return db.execute(
                "DELETE FROM ops WHERE (id = ? OR seq = ?) AND state != 'done'", (op_id, op_id)
            ).rowcount

    # --- delivering ---------------------------------------------------------------------
    @contextlib.contextmanager
    def lock(self, wait_s: float) -> Iterator[bool]:
        """The delivery lock (one deliverer per spool, across processes): True if taken."""
        path = self.path.with_name(self.path.name + ".lock")
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + wait_s
        taken = False
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    taken = True
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        break
                    time.sleep(0.05)
            yield taken
        finally:
            if taken:
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def deliver(
        self,
        client: Client,
        *,
        budget_s: float = 30.0,
        ignore_backoff: bool = False,
        on_result: Callable[[Spool, dict[str, Any], dict[str, Any]], None] | None = None,
    ) -> Report:
        """Send what is due, batch by batch, until nothing is due or the budget is spent."""
        report = Report()
        deadline = time.monotonic() + budget_s
        with self.lock(wait_s=min(budget_s, 15.0)) as taken:
            if not taken:
                report.busy = True
                report.stopped = "another delivery holds the spool lock"
                report.pending = self.counts()["pending"]
                return report
            self._prune()
            progress = True
            tried: set[str] = set()  # each operation is sent at most once per delivery
            while progress and report.stopped is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0.2:
                    report.stopped = "time budget spent"
                    break
                batch = self._due(ignore_backoff, tried)
                if not batch:
                    break
                tried.update(item["id"] for item in batch)
                progress = self._send(client, batch, report, remaining, on_result)
        report.pending = self.counts()["pending"]
        return report

    def batch_size(self) -> int:
        """Operations per request: 100, halved after a batch timed out once sent (a slow
        store), doubled back after each answered batch."""
        try:
            return max(1, min(BATCH, int(self.get("batch_size") or BATCH)))
        except ValueError:
            return BATCH

    def _prune(self) -> None:
        with self.tx(durable=False) as db:
            db.execute(
                "DELETE FROM ops WHERE state IN ('done', 'conflict') AND done_at < ?",
                (time.time() - DONE_KEPT_S,),
            )

    def _due(self, ignore_backoff: bool, tried: set[str]) -> list[dict[str, Any]]:
        """The next batch of pending operations, payloads checked and references resolved;
        one whose reference is not resolved yet waits (with everything after it)."""
        now = time.time()
        cutoff = float("inf") if ignore_backoff else now
        rows = self.db.execute(
            "SELECT seq, id, kind, args, hash FROM ops WHERE state = 'pending' AND next_at <= ? "
            "ORDER BY seq LIMIT ?",
            (cutoff, self.batch_size() + len(tried)),
        ).fetchall()
        batch: list[dict[str, Any]] = []
        for seq, op_id, kind, text, digest in rows:
            if op_id in tried:
                continue
            if len(batch) >= self.batch_size():
                break
            try:
                args = json.loads(text)
                if not isinstance(args, dict):
                    raise ValueError("args is not an object")
            except ValueError as exc:
                self._finish(
                    op_id, "quarantined", "rejected", {"code": "corrupt", "message": str(exc)}
                )
                continue
            if payload_hash(kind, args) != digest:
                self._finish(
                    op_id,
                    "quarantined",
                    "rejected",
                    {
                        "code": "tampered",
                        "message": "the payload changed on disk since it was spooled",
                    },
                )
                continue
            resolved = self._resolve(args, {item["id"] for item in batch})
            if resolved is None:
                if batch:
                    break
                continue  # waits for what it depends on
            if isinstance(resolved, str):
                self._finish(
                    op_id, "quarantined", "rejected", {"code": "dependency", "message": resolved}
                )
                continue
            batch.append({"seq": seq, "id": op_id, "op": kind, "args": resolved})
        return batch

    def _resolve(self, args: dict[str, Any], batch: set[str]) -> dict[str, Any] | str | None:
        """``{"$ref": op_id, "field": name}`` values replaced by that operation's result; one
        whose operation travels in this ``batch`` is left for the server to fill in (dependent
        operations go together). None: it waits; a string: it never can (why)."""
        out: dict[str, Any] = {}
        for key, value in args.items():
            if isinstance(value, dict) and "$ref" in value:
                if value["$ref"] in batch:
                    out[key] = value
                    continue
                row = self.db.execute(
                    "SELECT state, result FROM ops WHERE id = ?", (value["$ref"],)
                ).fetchone()
                if row is None or row[0] == "quarantined":
                    return f"it depends on operation {value['$ref']}, which was not applied"
                if row[0] == "pending":
                    return None
                result = json.loads(row[1] or "{}")
                if value.get("field") not in result:
                    return f"operation {value['$ref']} has no {value.get('field')!r}"
                out[key] = result[value["field"]]
            else:
                out[key] = value
        return out

    def _alone(self, item: dict[str, Any]) -> dict[str, Any] | None:
        """``item`` to be sent by itself: a reference it left for the server to fill from its
        batch is filled from the spool now. None when it cannot go alone: what it depends on is
        still pending (it waits, as in ``_due``), or was refused (it is set apart, saying so)."""
        resolved = self._resolve(item["args"], set())
        if resolved is None:
            return None
        if isinstance(resolved, str):
            self._finish(
                item["id"], "quarantined", "rejected", {"code": "dependency", "message": resolved}
            )
            return None
        return {**item, "args": resolved}

    def _send(
        self,
        client: Client,
        batch: list[dict[str, Any]],
        report: Report,
        remaining: float,
        on_result: Callable[[Spool, dict[str, Any], dict[str, Any]], None] | None,
    ) -> bool:
        ids = [item["id"] for item in batch]
        with self.tx(durable=False) as db:
            db.executemany(
                "UPDATE ops SET attempts = attempts + 1, sent_at = ? WHERE id = ?",
                [(time.time(), op_id) for op_id in ids],
            )
        body = {"operations": [{k: item[k] for k in ("id", "op", "args")} for item in batch]}
        report.sent += len(batch)
        try:
            answer = client.call(
                "POST", client.user_path("operations"), body, timeout=min(client.timeout, remaining)
            )
        except Offline as exc:
            self._backoff(ids)
            report.retry += len(ids)
            if exc.sent and len(batch) > 1:  # it may have been applied: the replay will say
                self.put("batch_size", str(max(1, len(batch) // 2)))
                return True  # the server is there but slow: go on with smaller batches
            report.stopped = f"offline: {exc}"
            return False
        except HttpError as exc:
            if exc.status in (401, 403):
                self._backoff(ids)
                report.auth_failed = True
                report.stopped = (
                    f"the server refused the token ({exc.status} {exc.code}: {exc.message}); "
                    "nothing was dropped: `atlas login` with a valid token, then `atlas sync`"
                )
                return False
            if exc.status in (400, 413, 500) and len(batch) > 1:
                # one operation the server will not parse (400, 413) or fails on (500) fails
                # the whole batch: send each alone, so the bad one is set apart and the others
                # go through
                for item in batch:
                    if report.stopped is not None:
                        break
                    alone = self._alone(item)
                    if alone is not None:
                        self._send(client, [alone], report, remaining, on_result)
                return True
            if exc.status in (400, 413, 404, 422):
                self._finish(
                    ids[0],
                    "quarantined",
                    "rejected",
                    {"code": exc.code, "message": exc.message, "details": exc.details},
                )
                report.rejected.append(
                    {"id": ids[0], "op": batch[0]["op"], "code": exc.code, "message": exc.message}
                )
                return True
            if exc.status == 429:
                return self._throttled(client, batch, report, remaining, on_result, exc)
            if exc.status == 500:
                # the server fails on this operation alone: it waits (backoff; kept, a fixed
                # server takes it) and the others go on
                self._backoff(ids, {"code": exc.code, "message": exc.message})
                report.retry += 1
                return True
            self._backoff(ids)
            report.retry += len(ids)
            report.stopped = f"server answered {exc.status} {exc.code}"
            return False
        results = answer.get("results") if isinstance(answer, dict) else None
        if not isinstance(results, list) or len(results) != len(batch):
            self._backoff(ids)
            report.retry += len(ids)
            report.stopped = "the server's answer did not have one result per operation"
            return False
        for item, outcome in zip(batch, results, strict=True):
            self._record(item, outcome, report, on_result)
        if len(batch) >= self.batch_size() and self.batch_size() < BATCH:
            self.put("batch_size", str(min(BATCH, self.batch_size() * 2)))
        return True

    def _throttled(
        self,
        client: Client,
        batch: list[dict[str, Any]],
        report: Report,
        remaining: float,
        on_result: Callable[[Spool, dict[str, Any], dict[str, Any]], None] | None,
        exc: HttpError,
    ) -> bool:
        """Past the token's rate limit: wait as told and send the batch again when the budget
        allows it, else keep it pending until then and say so (never a silent stop)."""
        wait = exc.retry_after if exc.retry_after is not None else 1.0
        report.sent -= len(batch)
        if wait + 1.0 < remaining:
            time.sleep(wait)
            return self._send(client, batch, report, remaining - wait, on_result)
        self._backoff([item["id"] for item in batch], floor_s=wait)
        report.throttled = True
        report.stopped = (
            f"throttled by the server (rate limit): {len(batch)} operations wait {wait:.0f} s; "
            "nothing is lost, `atlas sync` sends them then"
        )
        return False

    def _record(
        self,
        item: dict[str, Any],
        outcome: dict[str, Any],
        report: Report,
        on_result: Callable[[Spool, dict[str, Any], dict[str, Any]], None] | None,
    ) -> None:
        status = outcome.get("status")
        error = outcome.get("error")
        op_id = item["id"]
        if status in ("applied", "duplicate"):
            self._finish(op_id, "done", status, None, outcome.get("result"))
            if status == "applied":
                report.applied += 1
            else:
                report.duplicate += 1
        elif status == "conflict":
            self._finish(op_id, "conflict", status, error, None)
            report.conflict.append({"id": op_id, "op": item["op"], "error": error})
        elif status == "rejected":
            self._finish(op_id, "quarantined", status, error, None)
            report.rejected.append({"id": op_id, "op": item["op"], "error": error})
        else:  # retry, or anything this client does not know: try again later
            self._backoff([op_id], error)
            report.retry += 1
        if on_result is not None:
            with contextlib.suppress(Exception):
                on_result(self, item, outcome)

    def _finish(
        self,
        op_id: str,
        state: str,
        status: str,
        error: Any,
        result: Any = None,
    ) -> None:
        with self.tx(durable=False) as db:
            db.execute(
                "UPDATE ops SET state = ?, status = ?, error = ?, result = ?, done_at = ? "
                "WHERE id = ?",
                (
                    state,
                    status,
                    None if error is None else json.dumps(error),
                    None if result is None else json.dumps(result),
                    time.time(),
                    op_id,
                ),
            )

    def _backoff(self, ids: list[str], error: Any = None, *, floor_s: float = 0.0) -> None:
        base = float(os.environ.get("ATLAS_BACKOFF_BASE_S", "2"))
        now = time.time()
        with self.tx(durable=False) as db:
            for op_id in ids:
                (attempts,) = db.execute(
                    "SELECT attempts FROM ops WHERE id = ?", (op_id,)
                ).fetchone()
                delay = min(BACKOFF_CAP_S, base * 2 ** max(0, attempts - 1))
                delay *= random.uniform(0.5, 1.5)  # noqa: S311 - jitter: machines back online do not stampede
                delay = max(delay, floor_s)
                db.execute(
                    "UPDATE ops SET next_at = ?, status = 'retry', error = ? WHERE id = ?",
                    (now + delay, None if error is None else json.dumps(error), op_id),
                )
