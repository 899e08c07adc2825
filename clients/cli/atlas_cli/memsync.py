"""``atlas memory-files`` (alias ``sync-memories``): memory files (Claude Code's per-project
auto-memory, or any configured folder) pushed by content hash and pulled from other machines.

Each file is keyed by the project and its path relative to the folder. The spool remembers,
per file, the hash last agreed with the server (``base``); a push sends a changed file with
that base, so the server refuses (409) a change made from a stale version, whether the other
machine edited the file or deleted it. A pull writes what another machine changed only over a
file left untouched since the last sync (and holding no ``<private>`` text); otherwise it is a
conflict, and nothing local is replaced or deleted:

- edited here and there: the other version is written beside it as
  ``<name>.conflict-<machine>.md``; merge it into the file, then delete the conflict file;
- edited here, deleted there: the conflict file says so; delete it to keep the file (it is
  sent again), or delete both to accept the deletion;
- deleted here, edited there: the conflict file holds the other version; rename it to the
  file's name to keep it, or delete it to confirm the deletion.

A conflict is open while its conflict file exists (or, found by a push, until a pull fetches
the other version); while open, that file alone is neither pushed nor pulled. ``open_conflicts``
lists them (the SessionStart brief's first lines, ``atlas status``).

What is sent never holds ``<private>`` spans, nor files ``.atlasignore`` (at the folder's
root) matches; an ignored file is neither pushed, deleted nor pulled. Paths are checked (see
``atlas_cli.paths``) and nothing is written through a symbolic link.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from atlas_cli import moves, paths
from atlas_cli.ignore import Ignore
from atlas_cli.private import has_private, strip_private
from atlas_cli.spool import Spool

CONFLICT = ".conflict-"
DELETED = "deleted"  # a state's hash for "deleted" (sent: a delete spooled; conflict: gone there)
COLUMNS = ("base_hash", "sent_hash", "conflict_hash", "conflict_file", "conflict_machine")


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sent_form(text: str) -> tuple[str, str]:
    """What a push sends of a file's text (its private spans removed) and that text's hash
    (the server's ``content_hash`` of it)."""
    clean = strip_private(text)
    return clean, digest(clean.encode("utf-8"))


def is_conflict_file(name: str) -> bool:
    return CONFLICT in name


def local_files(folder: Path, ignore: Ignore | None = None) -> dict[str, Path]:
    """The folder's memory files that may be sent: ``.md``, not hidden, not a link, not a
    conflict file, a safe path, not ignored."""
    ignore = ignore if ignore is not None else Ignore.load(folder)
    return {
        rel: path
        for rel, path in paths.walk_files(folder)
        if not is_conflict_file(path.name)
        and paths.path_problem(rel) is None
        and not ignore.ignored(rel)
    }


@dataclass
class SyncReport:
    pushed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    pulled: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    pull_skipped: str = ""  # why --pull did not run (the server unreachable); "" when it ran

    def conflict(self, rel: str, other: str | None) -> None:
        """Report ``rel``'s conflict once (the pull's word replaces the push's)."""
        self.conflicts = [c for c in self.conflicts if not c.startswith(f"{rel} -> ")]
        self.conflicts.append(f"{rel} -> {other or 'not fetched yet'}")

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


# --- per-file state ------------------------------------------------------------------------
@dataclass
class State:
    base_hash: str | None = None
    sent_hash: str | None = None
    conflict_hash: str | None = None  # the other side's version (DELETED: deleted there)
    conflict_file: str | None = None  # its conflict file (None: not fetched yet)
    conflict_machine: str | None = None


def _state(spool: Spool, key: str, rel: str) -> State:
    row = spool.db.execute(
        f"SELECT {', '.join(COLUMNS)} FROM memfiles WHERE project_key=? AND path=?",  # noqa: S608
        (key, rel),
    ).fetchone()
    return State(*row) if row else State()


def _set(spool: Spool, key: str, rel: str, **values: str | None) -> None:
    merged = {**_state(spool, key, rel).__dict__, **values}
    with spool.tx() as db:
        db.execute(
            f"INSERT OR REPLACE INTO memfiles (project_key, path, {', '.join(COLUMNS)}) "  # noqa: S608
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (key, rel, *(merged[c] for c in COLUMNS)),
        )


def _clear_conflict(spool: Spool, key: str, rel: str, **values: str | None) -> None:
    _set(spool, key, rel, conflict_hash=None, conflict_file=None, conflict_machine=None, **values)


def _forget_state(spool: Spool, key: str, rel: str) -> None:
    with spool.tx() as db:
        db.execute("DELETE FROM memfiles WHERE project_key=? AND path=?", (key, rel))


def conflict_name(rel: str, machine: str) -> str:
    """``notes/x.md`` -> ``notes/x.conflict-<machine>.md``."""
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "-_") else "-" for c in machine)
    head, _, name = rel.rpartition("/")
    stem, dot, suffix = name.rpartition(".")
    stem, suffix = (stem, f".{suffix}") if dot else (name, "")
    other = f"{stem}{CONFLICT}{safe[:60] or 'remote'}{suffix}"
    return f"{head}/{other}" if head else other


# --- open conflicts ------------------------------------------------------------------------
@dataclass(frozen=True)
class Conflict:
    """One open conflict: ``kind`` is ``edited`` (here and there), ``deleted_there`` (edited
    here), ``deleted_here`` (edited there) or ``pending`` (the other version not fetched)."""

    path: str
    kind: str
    machine: str
    other: str | None  # the conflict file, relative to the folder

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _is_open(folder: Path, state: State) -> bool:
    if state.conflict_hash is None:
        return False
    if state.conflict_file is None:
        return True  # found by a push: the pull has not fetched the other version yet
    try:
        return paths.read_bytes(folder, state.conflict_file) is not None
    except OSError:
        return True  # a link or a folder where the conflict file was: not resolved


def open_conflicts(spool: Spool, *, project_key: str, folder: Path) -> list[Conflict]:
    """The project's open memory-file conflicts, by path."""
    rows = spool.db.execute(
        f"SELECT path, {', '.join(COLUMNS)} FROM memfiles "  # noqa: S608
        "WHERE project_key=? AND conflict_hash IS NOT NULL ORDER BY path",
        (project_key,),
    ).fetchall()
    found = []
    for rel, *values in rows:
        state = State(*values)
        if not _is_open(folder, state):
            continue
        local = _read(folder, rel)
        kind = (
            "pending"
            if state.conflict_file is None
            else "deleted_there"
            if state.conflict_hash == DELETED
            else "deleted_here"
            if local is None
            else "edited"
        )
        found.append(
            Conflict(rel, kind, state.conflict_machine or "another machine", state.conflict_file)
        )
    return found


def _read(folder: Path, rel: str) -> bytes | None:
    try:
        return paths.read_bytes(folder, rel)
    except OSError:
        return None


# --- push ----------------------------------------------------------------------------------
def push(
    spool: Spool, *, project_key: str, folder: Path, machine_key: str, report: SyncReport
) -> None:
    """Spool a put for each file changed since the last sync, a delete for each removed; a
    file with an open conflict waits (the others go on)."""
    ignore = Ignore.load(folder)
    files = local_files(folder, ignore)
    for rel, path in files.items():
        try:
            content, now_hash = sent_form(path.read_bytes().decode("utf-8"))
        except (OSError, UnicodeDecodeError):
            report.skipped.append(rel)
            continue
        state = _settled(spool, project_key, folder, rel, report)
        if state is None or now_hash in (state.base_hash, state.sent_hash):
            continue
        args: dict[str, Any] = {
            "project_key": project_key,
            "path": rel,
            "content": content,
            "machine_key": machine_key,
        }
        # after a delete of our own (spooled, applied first) the file is a new one: no base
        if state.sent_hash != DELETED and (state.sent_hash or state.base_hash):
            args["base_hash"] = state.sent_hash or state.base_hash
        spool.add("memory_file.put", args)
        _set(spool, project_key, rel, sent_hash=now_hash)
        report.pushed.append(rel)
    _push_deletes(spool, project_key, folder, machine_key, files, ignore, report)


def _settled(spool: Spool, key: str, folder: Path, rel: str, report: SyncReport) -> State | None:
    """The file's state once a resolved conflict is settled (its conflict file gone: the
    change is now based on the other side's version); None while a conflict is open."""
    state = _state(spool, key, rel)
    if state.conflict_hash is None:
        return state
    if _is_open(folder, state):
        report.conflict(rel, state.conflict_file)
        return None
    base = None if state.conflict_hash == DELETED else state.conflict_hash
    _clear_conflict(spool, key, rel, base_hash=base, sent_hash=None)
    return State(base_hash=base)


def _push_deletes(
    spool: Spool,
    key: str,
    folder: Path,
    machine_key: str,
    files: dict[str, Path],
    ignore: Ignore,
    report: SyncReport,
) -> None:
    rows = spool.db.execute("SELECT path FROM memfiles WHERE project_key=?", (key,)).fetchall()
    for (rel,) in rows:
        if (
            rel in files
            or ignore.ignored(rel)
            or (folder / rel).is_symlink()
            or (folder / rel).exists()
        ):
            continue  # present (or ignored, a link, unreadable: never a delete by mistake)
        state = _settled(spool, key, folder, rel, report)
        if state is None:
            continue
        based_on = state.sent_hash or state.base_hash
        if not based_on or state.sent_hash == DELETED:
            if state.base_hash is None and state.sent_hash is None:
                _forget_state(spool, key, rel)  # gone on both sides
            continue
        delete = {
            "project_key": key,
            "path": rel,
            "base_hash": based_on,
            "machine_key": machine_key,
        }
        spool.add("memory_file.delete", delete)
        _set(spool, key, rel, sent_hash=DELETED)
        report.deleted.append(rel)


# --- pull ----------------------------------------------------------------------------------
def pull(
    spool: Spool,
    remote: list[dict[str, Any]],
    *,
    project_key: str,
    folder: Path,
    machine_key: str,
    report: SyncReport,
) -> None:
    """Apply other machines' changes; a file changed on both sides: a conflict file, nothing
    replaced. One file that cannot be written (a link, a refused name) is skipped alone."""
    ignore = Ignore.load(folder)
    for item in remote:
        rel = str(item.get("path", ""))
        if paths.path_problem(rel) is not None or is_conflict_file(rel) or ignore.ignored(rel):
            report.skipped.append(rel)
            continue
        if item.get("machine_key") == machine_key:
            continue  # our own change, already here
        try:
            _pull_one(spool, item, rel, project_key, folder, report)
        except OSError as exc:
            report.skipped.append(f"{rel}: {exc}")


def _pull_one(
    spool: Spool, item: dict[str, Any], rel: str, key: str, folder: Path, report: SyncReport
) -> None:
    state = _state(spool, key, rel)
    raw = paths.read_bytes(folder, rel)
    text = raw.decode("utf-8", errors="replace") if raw is not None else None
    local = sent_form(text)[1] if text is not None else None
    unsent = state.sent_hash is not None and state.sent_hash != state.base_hash
    untouched = local == state.base_hash and not unsent and not has_private(text or "")
    machine = str(item.get("machine_key") or "remote")
    if item.get("deleted"):
        if raw is None:
            _forget_state(spool, key, rel)  # gone on both sides: nothing left to decide
            return
        if state.base_hash is None:
            return  # never synced here: a new file of this machine
        if untouched and state.conflict_hash is None:
            paths.remove(folder, rel)
            _forget_state(spool, key, rel)
            report.removed.append(rel)
            return
        _conflict(spool, key, folder, rel, DELETED, machine, _deleted_note(rel, machine), report)
        return
    content, remote_hash = item.get("content"), item.get("content_hash")
    if not isinstance(content, str) or not isinstance(remote_hash, str):
        return
    if local == remote_hash and not has_private(text or ""):
        _clear_conflict(spool, key, rel, base_hash=remote_hash, sent_hash=None)
        return  # the same on both sides
    if remote_hash == state.base_hash and state.conflict_hash is None:
        return  # nothing new there
    if state.conflict_hash is None and (untouched or (raw is None and state.base_hash is None)):
        paths.write_text(folder, rel, content)
        _clear_conflict(spool, key, rel, base_hash=remote_hash, sent_hash=None)
        report.pulled.append(rel)
        return
    _conflict(spool, key, folder, rel, remote_hash, machine, content, report)


def _deleted_note(rel: str, machine: str) -> str:
    return (
        f"Atlas: {rel} was deleted on {machine}, and it was changed here since.\n"
        f"To keep it: delete this file (Atlas sends {rel} again).\n"
        f"To accept the deletion: delete {rel} and this file.\n"
    )


def _conflict(
    spool: Spool,
    key: str,
    folder: Path,
    rel: str,
    other_hash: str,
    machine: str,
    content: str,
    report: SyncReport,
) -> None:
    """Record (or refresh) the conflict and its file. An open conflict's file is replaced by a
    newer version from there only if nobody touched it; else it stays as it is."""
    state = _state(spool, key, rel)
    other = state.conflict_file or _free_name(folder, conflict_name(rel, machine), content)
    if state.conflict_file is not None and _is_open(folder, state):
        if state.conflict_hash == other_hash:
            report.conflict(rel, other)
            return
        current = _read(folder, other)
        written = state.conflict_hash if state.conflict_hash != DELETED else None
        if current is None or written is None or digest(current) != written:
            report.conflict(rel, other)
            return  # the user is working on it: the newer version waits for the next round
    paths.write_text(folder, other, content)
    _set(
        spool,
        key,
        rel,
        conflict_hash=other_hash,
        conflict_file=other,
        conflict_machine=machine,
        sent_hash=None,
    )
    report.conflict(rel, other)


def _free_name(folder: Path, name: str, content: str) -> str:
    """``name``, or ``<stem>-2.md``, ... when another file of that name is there already (a
    conflict file this spool does not know of, say from an older client, is never written
    over; one holding ``content`` already is taken as it is)."""
    stem, dot, suffix = name.rpartition(".")
    candidate, n = name, 1
    while (folder / candidate).exists() or (folder / candidate).is_symlink():
        if _read(folder, candidate) == content.encode("utf-8"):
            return candidate
        n += 1
        candidate = f"{stem}-{n}.{suffix}" if dot else f"{name}-{n}"
    return candidate


# --- the server's answers ------------------------------------------------------------------
def on_result(spool: Spool, item: dict[str, Any], outcome: dict[str, Any]) -> None:
    """Bookkeeping after the server answered an operation: memory files' agreed hashes and
    conflicts, entities' versions."""
    op, args, status = item["op"], item["args"], outcome.get("status")
    result = outcome.get("result") or {}
    if op in ("memory_file.put", "memory_file.delete"):
        _memory_file_result(spool, op, args, status, result, outcome.get("error") or {})
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


def _memory_file_result(
    spool: Spool,
    op: str,
    args: dict[str, Any],
    status: Any,
    result: dict[str, Any],
    error: dict[str, Any],
) -> None:
    key, rel = args["project_key"], args["path"]
    state = _state(spool, key, rel)
    if status in ("applied", "duplicate") and op == "memory_file.delete":
        _forget_state(spool, key, rel)
    elif status in ("applied", "duplicate"):
        applied = result.get("content_hash")
        sent = None if state.sent_hash == applied else state.sent_hash
        _set(spool, key, rel, base_hash=applied, sent_hash=sent)
    elif status == "conflict" and error.get("code") == "memory_file_conflict":
        details = error.get("details") or {}
        other = DELETED if details.get("deleted") else str(details.get("content_hash") or "")
        if state.conflict_hash is not None:
            _set(spool, key, rel, sent_hash=None)  # known already (the pull fetched it)
            return
        machine = str(details.get("machine_key") or "another machine")
        _set(spool, key, rel, sent_hash=None, conflict_hash=other, conflict_machine=machine)
    elif status == "conflict":
        _set(spool, key, rel, sent_hash=None)


def entity_base(spool: Spool, project_key: str, rel: str) -> int | None:
    row = spool.db.execute(
        "SELECT version FROM entities WHERE project_key=? AND path=?", (project_key, rel)
    ).fetchone()
    return int(row[0]) if row and row[0] is not None else None
