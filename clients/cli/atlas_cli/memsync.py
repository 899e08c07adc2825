"""``atlas sync-memories``: memory files (Claude Code's per-project auto-memory, or any
configured folder) pushed by content hash and pulled from other machines.

Each file is keyed by the project and its path relative to the folder. The spool remembers,
per file, the hash last agreed with the server (``base``); a push sends a changed file with
that base, so the server refuses (409) a change made from a stale version. A pull writes what
another machine changed only over a file left untouched since the last sync; when both sides
changed it writes ``<name>.conflict-<machine>.md`` beside it and reports it. Nothing local is
ever overwritten or deleted unless it is exactly the version last synced.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from atlas_cli import moves
from atlas_cli.spool import Spool

CONFLICT = ".conflict-"


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def local_files(folder: Path) -> dict[str, Path]:
    if not folder.is_dir():
        return {}
    found: dict[str, Path] = {}
    for path in sorted(folder.rglob("*.md")):
        rel = path.relative_to(folder).as_posix()
        if CONFLICT in path.name or any(part.startswith(".") for part in rel.split("/")):
            continue
        if path.is_file():
            found[rel] = path
    return found


@dataclass
class SyncReport:
    pushed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    pulled: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    pull_skipped: str = ""  # why --pull did not run (the server unreachable); "" when it ran

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _state(spool: Spool, key: str, rel: str) -> tuple[str | None, str | None, str | None]:
    row = spool.db.execute(
        "SELECT base_hash, sent_hash, conflict_hash FROM memfiles WHERE project_key=? AND path=?",
        (key, rel),
    ).fetchone()
    return (row[0], row[1], row[2]) if row else (None, None, None)


def _set(spool: Spool, key: str, rel: str, **values: str | None) -> None:
    base, sent, conflict = _state(spool, key, rel)
    merged = {"base_hash": base, "sent_hash": sent, "conflict_hash": conflict, **values}
    with spool.tx() as db:
        db.execute(
            "INSERT OR REPLACE INTO memfiles "
            "(project_key, path, base_hash, sent_hash, conflict_hash) VALUES (?, ?, ?, ?, ?)",
            (key, rel, merged["base_hash"], merged["sent_hash"], merged["conflict_hash"]),
        )


def _forget_state(spool: Spool, key: str, rel: str) -> None:
    with spool.tx() as db:
        db.execute("DELETE FROM memfiles WHERE project_key=? AND path=?", (key, rel))


def conflict_name(path: Path, machine: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in machine)[:60] or "remote"
    return path.with_name(f"{path.stem}{CONFLICT}{safe}{path.suffix}")


def push(
    spool: Spool, *, project_key: str, folder: Path, machine_key: str, report: SyncReport
) -> None:
    """Spool a put for each file changed since the last sync, a delete for each removed."""
    files = local_files(folder)
    for rel, path in files.items():
        try:
            data = path.read_bytes()
            content = data.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            report.skipped.append(rel)
            continue
        now_hash = digest(data)
        base, sent, conflict = _state(spool, project_key, rel)
        if conflict is not None:
            if conflict_name(path, "x").parent.exists() and any(
                p.name.startswith(f"{path.stem}{CONFLICT}") for p in path.parent.iterdir()
            ):
                report.conflicts.append(rel)  # resolved when its conflict file is removed
                continue
            base = conflict  # the user merged: the change is based on the remote version
            _set(spool, project_key, rel, base_hash=base, conflict_hash=None)
        if now_hash in (base, sent):
            continue
        args: dict[str, Any] = {
            "project_key": project_key,
            "path": rel,
            "content": content,
            "machine_key": machine_key,
        }
        if sent or base:
            args["base_hash"] = sent or base
        spool.add("memory_file.put", args)
        _set(spool, project_key, rel, sent_hash=now_hash)
        report.pushed.append(rel)
    rows = spool.db.execute(
        "SELECT path, base_hash, sent_hash FROM memfiles WHERE project_key=?", (project_key,)
    ).fetchall()
    for rel, base, sent in rows:
        if rel in files or not (sent or base) or sent == "deleted":
            continue
        spool.add(
            "memory_file.delete",
            {
                "project_key": project_key,
                "path": rel,
                "base_hash": sent or base,
                "machine_key": machine_key,
            },
        )
        _set(spool, project_key, rel, sent_hash="deleted")
        report.deleted.append(rel)


def pull(
    spool: Spool,
    remote: list[dict[str, Any]],
    *,
    project_key: str,
    folder: Path,
    machine_key: str,
    report: SyncReport,
) -> None:
    """Apply other machines' changes; both sides changed: a conflict file, nothing replaced."""
    for item in remote:
        rel = str(item.get("path", ""))
        parts = rel.split("/")
        if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
            continue
        if item.get("machine_key") == machine_key:
            continue  # our own change, already here
        target = folder / rel
        base, sent, _ = _state(spool, project_key, rel)
        local = digest(target.read_bytes()) if target.is_file() else None
        unsent = sent is not None and sent != base
        if item.get("deleted"):
            if local is not None and local == base and not unsent:
                target.unlink()
                _forget_state(spool, project_key, rel)
                report.removed.append(rel)
            continue
        content = item.get("content")
        remote_hash = item.get("content_hash")
        if not isinstance(content, str) or remote_hash in (None, base):
            continue
        if local == remote_hash:
            _set(spool, project_key, rel, base_hash=remote_hash, sent_hash=None)
            continue
        untouched = (local is None and base is None) or (
            local is not None and local == base and not unsent
        )
        if untouched:
            _write(target, content)
            _set(spool, project_key, rel, base_hash=remote_hash, sent_hash=None, conflict_hash=None)
            report.pulled.append(rel)
            continue
        other = conflict_name(target, str(item.get("machine_key") or "remote"))
        _write(other, content)
        _set(spool, project_key, rel, conflict_hash=remote_hash)
        report.conflicts.append(f"{rel} -> {other.name}")


def _write(target: Path, content: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.atlas-tmp")
    with tmp.open("w", encoding="utf-8", newline="") as handle:
        handle.write(content)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, target)


def on_result(spool: Spool, item: dict[str, Any], outcome: dict[str, Any]) -> None:
    """Bookkeeping after the server answered an operation: memory files' agreed hashes,
    entities' versions."""
    op, args, status = item["op"], item["args"], outcome.get("status")
    result = outcome.get("result") or {}
    if op == "memory_file.put":
        key, rel = args["project_key"], args["path"]
        if status in ("applied", "duplicate"):
            _, sent, _ = _state(spool, key, rel)
            applied = result.get("content_hash")
            _set(spool, key, rel, base_hash=applied, sent_hash=None if sent == applied else sent)
        elif status == "conflict":
            details = (outcome.get("error") or {}).get("details") or {}
            _set(spool, key, rel, sent_hash=None)
            if details.get("content_hash"):
                spool.put(f"memconflict:{key}:{rel}", str(details["content_hash"]))
    elif op == "memory_file.delete":
        key, rel = args["project_key"], args["path"]
        if status in ("applied", "duplicate"):
            _forget_state(spool, key, rel)
        elif status == "conflict":
            _set(spool, key, rel, sent_hash=None)
    elif op == "entity.upsert" and status in ("applied", "duplicate"):
        entity = result.get("entity") or {}
        if isinstance(entity.get("version"), int):
            if args.get("moved_from"):
                moves.forget(spool, args["project_key"], args["moved_from"])
            with spool.tx() as db:
                db.execute(
                    "INSERT OR REPLACE INTO entities (project_key, path, version) VALUES (?, ?, ?)",
                    (args["project_key"], args["path"], entity["version"]),
                )
            if result.get("outcome") != "conflict":
                moves.remember(spool, args["project_key"], args["path"], args["content"])


def entity_base(spool: Spool, project_key: str, rel: str) -> int | None:
    row = spool.db.execute(
        "SELECT version FROM entities WHERE project_key=? AND path=?", (project_key, rel)
    ).fetchone()
    return int(row[0]) if row and row[0] is not None else None
