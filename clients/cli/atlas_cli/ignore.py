"""``.atlasignore``: files that are never sent, in gitignore's syntax.

One file at the root of the project (for notes: what PostToolUse, ``atlas entity`` and
``atlas graph reconcile`` index) and one at the root of the memory folder (for memory files).
Each line is a pattern, matched against the path relative to that root, ``/``-separated:

- blank lines and lines starting with ``#`` are skipped; ``!pattern`` re-includes;
- ``*`` and ``?`` match within one path segment (never across ``/``), ``[abc]`` a set; they
  are the standard library's ``fnmatch.fnmatchcase`` applied segment by segment, so matching
  is case-sensitive;
- ``**`` as a whole segment matches any number of segments (``**/drafts``, ``notes/**``,
  ``a/**/b``);
- a pattern with a ``/`` at its start or in its middle is anchored at the root; one without
  matches at any depth (``secret.md`` matches ``a/b/secret.md``);
- a trailing ``/`` matches folders only; everything under an ignored folder is ignored, and
  (as in git) a file under an ignored folder cannot be re-included;
- the last matching line wins.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

IGNORE_FILE = ".atlasignore"


@dataclass(frozen=True)
class Rule:
    parts: tuple[str, ...]
    negate: bool
    folders_only: bool

    @classmethod
    def parse(cls, line: str) -> Rule | None:
        text = line.rstrip("\n").rstrip()
        if not text or text.startswith("#"):
            return None
        negate = text.startswith("!")
        text = text[1:] if negate else text
        if text.startswith("\\"):  # \# and \! stand for themselves
            text = text[1:]
        folders_only = text.endswith("/")
        text = text.rstrip("/")
        anchored = "/" in text  # at its start or in its middle
        parts = tuple(p for p in text.split("/") if p)
        if not parts:
            return None
        return cls(parts if anchored else ("**", *parts), negate, folders_only)

    def matches(self, path: tuple[str, ...], *, folder: bool) -> bool:
        return (folder or not self.folders_only) and _match(self.parts, path)


def _match(pattern: tuple[str, ...], path: tuple[str, ...]) -> bool:
    if not pattern:
        return not path
    if pattern[0] == "**":
        return any(_match(pattern[1:], path[i:]) for i in range(len(path) + 1))
    return bool(path) and fnmatchcase(path[0], pattern[0]) and _match(pattern[1:], path[1:])


@dataclass(frozen=True)
class Ignore:
    rules: tuple[Rule, ...] = ()
    everything: bool = False  # the ignore file could not be read: nothing is sent

    @classmethod
    def of(cls, lines: Iterable[str]) -> Ignore:
        return cls(tuple(rule for rule in map(Rule.parse, lines) if rule is not None))

    @classmethod
    def load(cls, root: Path, defaults: Iterable[str] = ()) -> Ignore:
        """``defaults`` then ``root/.atlasignore``. An ignore file that exists but cannot be
        read ignores everything (said on stderr): what it meant to keep back stays back."""
        lines = list(defaults)
        try:
            lines += (root / IGNORE_FILE).read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            pass
        except (OSError, UnicodeDecodeError) as exc:
            print(f"atlas: {root / IGNORE_FILE} unreadable ({exc}): nothing sent", file=sys.stderr)
            return cls(everything=True)
        return cls.of(lines)

    def ignored(self, rel: str) -> bool:
        """Whether the file at ``rel`` (relative to the root) is ignored."""
        if self.everything:
            return True
        parts = tuple(p for p in rel.split("/") if p)
        for depth in range(1, len(parts)):
            if self._decide(parts[:depth], folder=True):
                return True
        return self._decide(parts, folder=False)

    def _decide(self, path: tuple[str, ...], *, folder: bool) -> bool:
        ignored = False
        for rule in self.rules:
            if rule.matches(path, folder=folder):
                ignored = not rule.negate
        return ignored


# What is not a note unless ``.atlasignore`` re-includes it (``!README.md``): a project's
# front-page documents and vendored folders (hidden files and folders are never notes).
NOT_NOTES = (
    "README.md",
    "CHANGELOG.md",
    "CHANGES.md",
    "HISTORY.md",
    "LICENSE.md",
    "CONTRIBUTING.md",
    "CODE_OF_CONDUCT.md",
    "SECURITY.md",
    "node_modules/",
    "vendor/",
    "site-packages/",
)


def note_rules(root: Path) -> Ignore:
    """The project's rules for notes: ``NOT_NOTES``, then its ``.atlasignore``."""
    return Ignore.load(root, NOT_NOTES)


def is_note(rel: str, rules: Ignore) -> bool:
    """Whether the file at ``rel`` (relative to the project root) is a note that may be sent:
    a ``.md`` file, no hidden segment, not ignored."""
    parts = rel.split("/")
    return (
        rel.endswith(".md")
        and not any(part.startswith(".") for part in parts)
        and not rules.ignored(rel)
    )
