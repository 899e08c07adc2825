"""Paths inside the memory folder, safely: which relative paths are acceptable (the server's
rules, ``agents.services.memory_files.path_problem``; tests keep them equal), and reading,
writing and removing files there without ever following a symbolic link, so a pull can
neither write outside the folder nor through a link inside it.

Writes go through directory file descriptors opened with ``O_NOFOLLOW`` from the folder down:
a link anywhere below the folder (a directory or the file itself) is refused, not followed.
The folder itself may be a link (a user's choice of where it lives)."""

from __future__ import annotations

import contextlib
import os
import re
import stat
import unicodedata
from collections.abc import Iterator
from pathlib import Path

MAX_PATH = 500
# Characters that read as a slash or a dot without being one (NFKC folds the fullwidth forms,
# one- and two-dot leaders and the small full stop into "/" and "."; these it does not).
LOOKALIKES = frozenset("\u2044\u2215\u29f8\u2571\u29f5\u2216\u3002\uff61\u0338")


class UnsafePath(OSError):
    """A path the folder must not be written at (a link on the way, or a refused name)."""


def path_problem(path: object) -> str | None:
    """Why ``path`` is not a safe path relative to the memory folder, or None (the checks run
    on its NFKC form: a fullwidth solidus or a one-dot leader counts as its ASCII twin)."""
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


def walk_files(folder: Path, suffix: str = ".md") -> Iterator[tuple[str, Path]]:
    """``(relative path, path)`` of the regular files under ``folder`` ending in ``suffix``,
    sorted; links (to files or directories) are never followed, hidden entries skipped."""
    if not folder.is_dir():
        return
    found: list[tuple[str, Path]] = []
    for top, dirs, files in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in files:
            path = Path(top) / name
            if name.startswith(".") or not name.endswith(suffix) or path.is_symlink():
                continue
            if path.is_file():
                found.append((path.relative_to(folder).as_posix(), path))
    yield from sorted(found)


@contextlib.contextmanager
def _parent_fd(folder: Path, rel: str, *, create: bool) -> Iterator[int]:
    """A descriptor of ``rel``'s directory, opened component by component without following
    links (created when ``create``); UnsafePath if one is a link or not a directory."""
    problem = path_problem(rel)
    if problem is not None:
        raise UnsafePath(f"{rel!r}: {problem}")
    flags = os.O_RDONLY | os.O_DIRECTORY
    fd = os.open(folder, flags)
    try:
        for part in rel.split("/")[:-1]:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
            try:
                child = os.open(part, flags | os.O_NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                raise
            except OSError as exc:
                raise UnsafePath(f"{rel!r}: {part!r} is a link or not a folder") from exc
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _regular_or_absent(fd: int, name: str, rel: str) -> bool:
    """Whether ``name`` exists (a regular file); UnsafePath for a link or anything else."""
    try:
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    if not stat.S_ISREG(info.st_mode):
        raise UnsafePath(f"{rel!r} is a link or not a regular file: left alone")
    return True


def write_text(folder: Path, rel: str, content: str) -> None:
    """Write ``folder/rel`` (atomically: a new file renamed over it), never through a link."""
    name = rel.rsplit("/", 1)[-1]
    tmp = f".{name}.atlas-tmp"
    folder.mkdir(parents=True, exist_ok=True)
    with _parent_fd(folder, rel, create=True) as fd:
        _regular_or_absent(fd, name, rel)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=fd)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        out = os.open(tmp, flags, 0o644, dir_fd=fd)
        try:
            with os.fdopen(out, "w", encoding="utf-8", newline="") as handle:
                handle.write(content)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=fd)
            raise


def read_bytes(folder: Path, rel: str) -> bytes | None:
    """``folder/rel``'s bytes, None when absent; UnsafePath for a link."""
    name = rel.rsplit("/", 1)[-1]
    try:
        with _parent_fd(folder, rel, create=False) as fd:
            if not _regular_or_absent(fd, name, rel):
                return None
            handle = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=fd)
            with os.fdopen(handle, "rb") as source:
                return source.read()
    except FileNotFoundError:
        return None


def remove(folder: Path, rel: str) -> None:
    """Remove the regular file ``folder/rel`` (a link is left alone: UnsafePath)."""
    name = rel.rsplit("/", 1)[-1]
    with _parent_fd(folder, rel, create=False) as fd:
        if _regular_or_absent(fd, name, rel):
            os.unlink(name, dir_fd=fd)
