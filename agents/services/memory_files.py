"""Memory files synced across machines (``atlas sync-memories``): one row per project and
relative path, its text in the memory store. A put writes a new version (a semantic fact
superseding the previous version), a delete forgets every version and leaves a tombstone.

Each change names the version it was made from (``base_hash``, the content hash the client
last synced; none for a file it never synced): when the server's current version is another,
the change is refused with 409 ``memory_file_conflict`` and the server's version in the
details, so a machine never overwrites what another machine wrote.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import unicodedata

from django.db import transaction

from agents.models import Agent, MemoryFile
from agents.selectors import own_project
from agents.services.common import audit, now
from atlas_platform.exceptions import Conflict, NotFound, ValidationError
from memory.public import memory_forget, memory_write

MAX_PATH = 500
_FRONT_KEY = re.compile(r"^([A-Za-z0-9_-]{1,64}):\s*(.*)$")


def content_hash(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


# Characters that read as a slash or a dot without being one (after NFKC, which folds the
# fullwidth forms, one- and two-dot leaders and the small full stop into "/" and "."): a path
# holding one is refused, never stored for another machine to write somewhere unexpected.
LOOKALIKES = frozenset("\u2044\u2215\u29f8\u2571\u29f5\u2216\u3002\uff61\u0338")


def path_problem(path: object) -> str | None:
    """Why ``path`` is not a safe path relative to the memory folder, or None. The checks run
    on its NFKC form (a fullwidth solidus or a one-dot leader is its ASCII twin there): no
    ``..`` / ``.`` / empty segment, no leading ``/`` or ``~``, no drive, no backslash, no
    control or format character, no look-alike of a slash or dot, nothing under ``.git``.
    The client (``atlas_cli.paths``) applies the same rules; tests keep them equal."""
    if not isinstance(path, str) or not 0 < len(path) <= MAX_PATH:
        return "a path of 1-500 characters"
    folded = unicodedata.normalize("NFKC", path)
    if any(unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Cn") for c in folded):
        return "no control, format or unassigned characters"
    if any(c in LOOKALIKES for c in folded) or (folded != path and _structural(folded, path)):
        return "no look-alikes of '/', '.' or '\\'"
    if "\\" in folded or folded.startswith(("/", "~")) or re.match(r"^[A-Za-z]:", folded):
        return "relative ('/'-separated, not absolute, no '~', no drive, no backslash)"
    parts = folded.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return "no empty, '.' or '..' segment"
    if any(part.lower() == ".git" for part in parts):
        return "nothing under .git"
    return None


def _structural(folded: str, path: str) -> bool:
    """Whether NFKC changed a character that shapes a path (a separator, a dot, a tilde)."""
    return any(folded.count(c) != path.count(c) for c in "/.\\~:")


def clean_path(path: str) -> str:
    """A path relative to the memory folder (``path_problem`` says what is refused)."""
    problem = path_problem(path)
    if problem is not None:
        raise ValidationError(
            f"path: {problem}.", code="bad_path", field="path", path=str(path)[:MAX_PATH]
        )
    return path


def front_matter(content: str) -> dict[str, str]:
    """The ``key: value`` lines of a leading ``---`` block (Claude Code's memory files carry
    ``name``, ``description``, ``type``); anything else there is left alone. The body is never
    touched: the whole file is what is stored."""
    lines = content.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}
    found: dict[str, str] = {}
    for line in lines[1:]:
        if line.strip() == "---":
            return found
        match = _FRONT_KEY.match(line)
        if match and len(found) < 20:
            found[match.group(1)] = match.group(2).strip().strip("'\"")[:200]
    return {}  # no closing line: not front matter


def _current(project_id: int, path: str) -> MemoryFile | None:
    return MemoryFile.objects.filter(project_id=project_id, path=path).first()


def _conflict(row: MemoryFile) -> Conflict:
    return Conflict(
        f"{row.path} was changed on another machine since the version this change is based on.",
        code="memory_file_conflict",
        path=row.path,
        content_hash="" if row.deleted else row.content_hash,
        version=row.version,
        deleted=row.deleted,
        machine_key=row.machine_key,
        memory_id=row.memory_id,
    )


def _based_on(row: MemoryFile | None, base_hash: str | None) -> bool:
    """Whether a change based on ``base_hash`` may replace ``row``: no row; the current
    version; or a tombstone, only for a file the client never had (no base): an edit of a
    version another machine deleted is a conflict, like an edit of one it replaced, so the
    file never comes back there unannounced."""
    if row is None:
        return True
    if row.deleted:
        return not base_hash
    return row.content_hash == (base_hash or "")


def memory_file_put(
    *,
    agent: Agent,
    project_key: str,
    path: str,
    content: str,
    base_hash: str | None = None,
    machine_key: str = "",
) -> MemoryFile:
    """Store this version of the file (a no-op when it is already the current one)."""
    user = agent.user
    project = own_project(user=user, key=project_key)
    path = clean_path(path)
    digest = content_hash(content)
    row = _current(project.pk, path)
    if row is not None and not row.deleted and row.content_hash == digest:
        return row
    if not _based_on(row, base_hash):
        raise _conflict(row)  # type: ignore[arg-type]
    previous = row.memory_id if row is not None and not row.deleted else ""
    meta = front_matter(content)
    doc = memory_write(  # the store, outside any transaction
        user=user,
        text=content,
        memory_type="semantic",
        supersedes=[previous] if previous else (),
        tags=["memory-file", f"agent:{agent.slug}"],
        metadata={
            "agent": agent.slug,
            "project": project.key,
            "memory_file": path,
            "front_matter": meta,
        },
        source="agent",
        project=project.key,
    )
    with transaction.atomic():
        row = MemoryFile.objects.select_for_update().filter(project=project, path=path).first()
        if not _based_on(row, base_hash) and row is not None and row.content_hash != digest:
            raced = row
        else:
            raced = None
            if row is None:
                row = MemoryFile(user=user, project=project, path=path, version=0, versions=[])
            row.version += 1
            row.content_hash = digest
            row.memory_id = doc.id
            row.versions = [*row.versions, doc.id][-100:]
            row.machine_key = machine_key
            row.deleted = False
            row.updated_at = now()
            row.save()
            audit("memory_file.put", user=user, target=row, agent=agent, version=row.version)
    if raced is not None:  # another machine's version landed while this one was written
        memory_forget(user=user, memory_id=doc.id)
        raise _conflict(raced)
    return row


def memory_file_delete(
    *, agent: Agent, project_key: str, path: str, base_hash: str, machine_key: str = ""
) -> MemoryFile:
    """Forget every version of the file; the row stays as a tombstone. Deleting a deleted
    file is a no-op; deleting a version another machine has replaced is a conflict."""
    user = agent.user
    project = own_project(user=user, key=project_key)
    path = clean_path(path)
    row = _current(project.pk, path)
    if row is None:
        raise NotFound(f"No memory file {path!r} in this project.", code="memory_file_not_found")
    if row.deleted:
        return row
    if row.content_hash != base_hash:
        raise _conflict(row)
    for memory_id in row.versions or [row.memory_id]:
        with contextlib.suppress(NotFound):  # forgotten already (a retry, or by hand)
            memory_forget(user=user, memory_id=memory_id)
    with transaction.atomic():
        MemoryFile.objects.filter(pk=row.pk).update(
            deleted=True,
            memory_id="",
            versions=[],
            version=row.version + 1,
            machine_key=machine_key,
            updated_at=now(),
        )
        audit("memory_file.delete", user=user, target=row, agent=agent)
    row.refresh_from_db()
    return row
