"""Renamed notes keep their entity: finding what moved, and what reconcile's manifest says.

A note renamed through Bash (``mv a.md b.md``, ``git mv docs notes``) fires no Write hook, so
the PostToolUse hook reads the command (``bash_moves``), checks on disk that each source is
gone and its target is there (``moved_notes``), and sends the new path with ``moved_from``.
A note written at a new path whose exact content was indexed here at a path now gone (the
old file removed first) is a move too (``gone_twin``). The server keeps the entity: same
history, a ``moved`` revision, the old key and path as aliases.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from pathlib import Path

from atlas_cli.spool import Spool

_SEPARATORS = re.compile(r"&&|\|\||[;|\n]")
_HASH_KEY = "entityhash:{project}:{path}"


def _segments(command: str) -> list[list[str]]:
    """The simple commands of a command line, as words (a part that does not split is
    skipped: quoting we cannot read is no move we can claim)."""
    found = []
    for part in _SEPARATORS.split(command):
        try:
            words = shlex.split(part)
        except ValueError:
            continue
        if words:
            found.append(words)
    return found


def _mv_operands(words: list[str], here: Path) -> tuple[list[str], Path] | None:
    """The operands of ``mv ...`` or ``git [-C dir] mv ...`` and the folder they are
    relative to (None: another command)."""
    if words[0] == "mv":
        rest = words[1:]
    elif words[0] == "git":
        rest = words[1:]
        while len(rest) > 1 and rest[0] in ("-C", "-c"):
            if rest[0] == "-C":
                here = here / Path(rest[1]).expanduser()
            rest = rest[2:]
        if not rest or rest[0] != "mv":
            return None
        rest = rest[1:]
    else:
        return None
    operands, target, options_done = [], None, False
    it = iter(rest)
    for word in it:
        if not options_done and word == "--":
            options_done = True
        elif not options_done and word in ("-t", "--target-directory"):
            target = next(it, None)
        elif not options_done and word.startswith("--target-directory="):
            target = word.split("=", 1)[1]
        elif not options_done and word.startswith("-") and word != "-":
            continue
        else:
            operands.append(word)
    return ([*operands, target] if target else operands), here


def bash_moves(command: str, cwd: Path) -> list[tuple[Path, Path]]:
    """(source, destination as written) for each ``mv`` / ``git mv`` of the command line,
    resolved against ``cwd`` (following ``cd`` between commands)."""
    if "mv" not in command:
        return []
    moves: list[tuple[Path, Path]] = []
    here = cwd
    for words in _segments(command):
        if words[0] == "cd" and len(words) == 2:
            here = (here / Path(words[1]).expanduser()).resolve()
            continue
        found = _mv_operands(words, here)
        if found is None or len(found[0]) < 2:
            continue
        operands, base = found
        destination = base / operands[-1]
        moves.extend((base / source, destination) for source in operands[:-1])
    return moves


def moved_notes(moves: list[tuple[Path, Path]], root: Path) -> list[tuple[str, Path]]:
    """(old path relative to ``root``, new file) for every markdown note that did move: the
    source is gone, the target exists (a file, a file inside a target folder, or each note
    of a moved folder)."""
    found: list[tuple[str, Path]] = []
    for source, destination in moves:
        if source.exists():
            continue
        inside = destination / source.name
        # `mv x dir` puts x inside dir; `mv x new` (new did not exist) renames x to new.
        target = inside if destination.is_dir() and inside.exists() else destination
        if target.is_dir():
            pairs = [(source / p.relative_to(target), p) for p in sorted(target.rglob("*.md"))]
        else:
            pairs = [(source, target)]
        for old, new in pairs:
            rel = _relative(old, root)
            if rel and new.suffix == ".md" and new.is_file() and _relative(new, root):
                found.append((rel, new))
    return found


def _relative(path: Path, root: Path) -> str | None:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None


def digest(content: str) -> str:
    """What the server's ``content_hash`` is: SHA-256 of the text as UTF-8."""
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


def remember(spool: Spool, project: str, path: str, content: str) -> None:
    """The content of a note as the server has it (after an applied upsert)."""
    spool.put(_HASH_KEY.format(project=project, path=path), digest(content))


def forget(spool: Spool, project: str, path: str) -> None:
    with spool.tx() as db:
        db.execute("DELETE FROM kv WHERE key = ?", (_HASH_KEY.format(project=project, path=path),))
        db.execute("DELETE FROM entities WHERE project_key = ? AND path = ?", (project, path))


def gone_twin(spool: Spool, project: str, root: Path, path: str, content: str) -> str | None:
    """The one path indexed here with exactly this content whose file is gone (the note was
    moved to ``path``), else None."""
    prefix = _HASH_KEY.format(project=project, path="")
    rows = spool.db.execute(
        "SELECT key FROM kv WHERE key >= ? AND key < ? AND value = ?",
        (prefix, prefix + "\uffff", digest(content)),
    ).fetchall()
    gone = [
        old
        for (key,) in rows
        for old in [key[len(prefix) :]]
        if old != path and not (root / old).exists()
    ]
    return gone[0] if len(gone) == 1 else None


def front_matter_id(text: str) -> str | None:
    """The ``id:`` of a note's front matter, read plainly (the server parses it for real;
    this only lets reconcile's manifest name a moved note)."""
    lines = text.lstrip("\ufeff").split("\n")
    if not lines or lines[0].rstrip("\r") != "---":
        return None
    for line in lines[1:200]:
        if line.rstrip("\r") in ("---", "..."):
            return None
        found = re.match(r"^id:\s*['\"]?([A-Za-z0-9][A-Za-z0-9._:@-]{0,127})['\"]?\s*$", line)
        if found:
            return found.group(1)
    return None
