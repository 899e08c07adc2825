"""What the corpus generators share: a seeded choice of phrasings, dates, splits, JSON output.

The generators are deterministic programs over hand-written material (``conversations.py``,
``agent_work.py``): the same code writes the same files, byte for byte, so the committed files
can be checked against it (``manage.py generate_corpora --check``). Variation comes from a
``random.Random`` seeded per corpus file: which phrasing of a line, which small talk fills a
session, how far apart sessions and turns are.
"""

from __future__ import annotations

import hashlib
import json
import random
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

VARIANT_SEPARATOR = " || "


def rng_for(name: str) -> random.Random:
    """A generator seeded from ``name`` (stable across Python versions and runs)."""
    return random.Random(int(hashlib.sha256(name.encode()).hexdigest()[:16], 16))  # noqa: S311


def pick(rng: random.Random, line: str) -> str:
    """One of the ``||``-separated phrasings of ``line``."""
    options = [part.strip() for part in line.split(VARIANT_SEPARATOR.strip())]
    return rng.choice([o for o in options if o])


def fill(text: str, names: dict[str, str]) -> str:
    for slot, name in names.items():
        text = text.replace("{" + slot + "}", name)
    return text


def iso(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds")


def balanced_splits(questions: list[dict[str, Any]]) -> None:
    """Give every question a ``split``: within each kind, questions in hash order alternate
    dev / test, so both splits hold every kind in about equal numbers."""
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for q in questions:
        by_kind.setdefault(q["kind"], []).append(q)
    for group in by_kind.values():
        ordered = sorted(group, key=lambda q: hashlib.sha1(q["id"].encode()).hexdigest())  # noqa: S324
        for n, q in enumerate(ordered):
            q["split"] = "dev" if n % 2 == 0 else "test"


def write_json(path: Path, data: dict[str, Any]) -> str:
    text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return text


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def minutes(rng: random.Random, low: int, high: int) -> timedelta:
    return timedelta(minutes=rng.randint(low, high))
