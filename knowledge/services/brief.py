"""How the session brief is fitted: the token estimate, items, the budget, duplicates.

A brief is sections of items in priority order. An item is one markdown line (or a few) with
the record it came from (``ref``: ``task:12``, ``entity:<key>``, ``memory:<id>``, ...). The
budget is met by choosing whole items, never by cutting text: a first round gives each section
its first few items, a second a few more, a last fills what is left in priority order; an item that
does not fit is left out whole and the brief says so. An item is shown once: a record that a
higher section already holds, or a free text (a memory) that repeats a chosen item's words,
is skipped.

The token estimate (``tokens``) is about four characters a token, rounded up per line: close
for English prose, low for long hex keys (which is why the brief names the project key once).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

WORD = re.compile(r"[a-z0-9]+")
# Two texts whose word sets overlap this much (Jaccard) say the same thing.
SAME_TEXT = 0.7
SHORT_WORDS = 3  # texts of this few words or fewer say too little to compare
# Free text that may repeat a record shown above (a memory restating a decision or a task):
# such items are compared by their words too. Records (tasks, notes) are told apart by ref.
FREE_TEXT = ("memory:",)


def tokens(text: str) -> int:
    """The brief's token estimate: ceil(characters / 4)."""
    return math.ceil(len(text) / 4)


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters, cut at a word boundary (with an
    ellipsis) when it is longer; never mid-word."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    if " " in cut:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:-") + "…"


def reason_of(body: str, limit: int = 220) -> str:
    """The first lines of a note's body that say something: headings, fences, front matter
    leftovers and blank lines skipped; the first paragraph, shortened at a word."""
    lines: list[str] = []
    fenced = False
    for raw in body.splitlines():
        line = raw.strip()
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced or line.startswith(("#", "---", "<!--")):
            if lines:
                break
            continue
        if not line:
            if lines:
                break
            continue
        lines.append(line.lstrip("-*> ").strip())
    return shorten(" ".join(lines), limit)


def relative(path: str, project_name: str) -> str:
    """A path as the project knows it: relative ones as they are; an absolute one (written by
    an older client, another machine's home) from below the project's folder when its name is
    in the path, else its last two parts."""
    clean = path.replace("\\", "/")
    if not clean.startswith("/") and not re.match(r"^[A-Za-z]:/", clean) and "~" not in clean[:1]:
        return clean.removeprefix("./")
    parts = [p for p in clean.split("/") if p]
    if project_name in parts:  # the first: a repository often holds a package of its name
        below = parts[parts.index(project_name) + 1 :]
        if below:
            return "/".join(below)
    return "/".join(parts[-2:])


@dataclass(frozen=True)
class Item:
    """One thing the brief may say: ``line`` (markdown) about the record ``ref``; ``text`` is
    what duplicates are judged on (default: the line); ``data`` goes into the JSON."""

    ref: str
    line: str
    data: dict[str, Any]
    text: str = ""
    also: tuple[str, ...] = ()  # other records the line names (not shown again elsewhere)

    def words(self) -> frozenset[str]:
        return frozenset(w for w in WORD.findall((self.text or self.line).lower()) if len(w) > 2)


def same_text(a: frozenset[str], b: frozenset[str]) -> bool:
    if len(a) <= SHORT_WORDS or len(b) <= SHORT_WORDS:
        return False
    return len(a & b) / len(a | b) >= SAME_TEXT


@dataclass
class Fitted:
    lines: list[str]
    chosen: dict[str, list[Item]]
    omitted: dict[str, int] = field(default_factory=dict)

    @property
    def truncated(self) -> bool:
        return any(self.omitted.values())


def fit(
    *,
    head: Sequence[str],
    sections: Sequence[tuple[str, str, list[Item]]],
    budget: int,
    first: dict[str, int],
    second: dict[str, int] | None = None,
) -> Fitted:
    """Choose items of ``sections`` (name, title, candidates; priority order) so that the
    markdown of ``head`` + the chosen sections stays within ``budget`` tokens: each section's
    ``first`` few, then (if given) its ``second`` few more, then the rest in priority order."""
    used = sum(tokens(line) + 1 for line in head)
    chosen: dict[str, list[Item]] = {name: [] for name, _, _ in sections}
    seen_refs: set[str] = set()
    seen_words: list[frozenset[str]] = []
    left = {name: _unique(items) for name, _, items in sections}
    rounds = [first, second, None] if second is not None else [first, None]
    for quota in rounds:
        for name, title, _ in sections:
            limit = len(left[name]) if quota is None else quota.get(name, 0)
            taken = 0
            for item in list(left[name]):
                if taken >= limit:
                    break
                words = item.words()
                free = item.ref.startswith(FREE_TEXT)
                if item.ref in seen_refs or (free and any(same_text(words, w) for w in seen_words)):
                    left[name].remove(item)  # said already: never shown, not counted as cut
                    continue
                cost = tokens(item.line) + 1 + (0 if chosen[name] else tokens(title) + 2)
                if used + cost > budget:
                    continue
                used += cost
                taken += 1
                chosen[name].append(item)
                left[name].remove(item)
                seen_refs.update((item.ref, *item.also))
                seen_words.append(words)
    lines = list(head)
    for name, title, items in sections:
        if chosen[name]:
            order = {id(item): n for n, item in enumerate(items)}
            chosen[name].sort(key=lambda item: order.get(id(item), 0))
            lines += ["", title, *(item.line for item in chosen[name])]
    return Fitted(lines, chosen, {name: len(left[name]) for name, _, _ in sections})


def _unique(items: Iterable[Item]) -> list[Item]:
    out: list[Item] = []
    refs: set[str] = set()
    for item in items:
        if item.ref not in refs:
            refs.add(item.ref)
            out.append(item)
    return out
