"""Lexical overlap between a question and its target memories: how much of the question's
content (stopwords removed, words stemmed) the target already contains. A paraphrase corpus
should keep this low, or the eval measures string matching instead of recall."""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable, Sequence
from typing import Any

STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your yours
    yourself yourselves also ever get got let lets didn't don't i'm i've we've what's
    which's ago last back remind tell know remember anything something thing things one ones
    us whats
    """.split()  # noqa: SIM905
)
TOKEN = re.compile(r"[a-z0-9]+(?:[.\-_/][a-z0-9]+)*")
SUFFIXES = ("ingly", "edly", "ings", "ing", "ied", "ies", "ed", "es", "ly", "s")


def stem(word: str) -> str:
    """A light suffix stripper (enough to match "resetting" with "reset", "bulbs" with
    "bulb"); tokens with digits are kept whole (versions, error codes)."""
    if any(c.isdigit() for c in word) or len(word) <= 3:
        return word
    for suffix in SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)] + ("y" if suffix in ("ied", "ies") else "")
            break
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
        word = word[:-1]  # "resett" -> "reset"
    return word


def content_terms(text: str) -> set[str]:
    return {stem(t) for t in TOKEN.findall(text.lower()) if t not in STOPWORDS}


def overlap(question: str, targets: Iterable[str]) -> float:
    """Share of the question's content terms found in the best-matching target (0..1)."""
    terms = content_terms(question)
    if not terms:
        return 0.0
    return max((len(terms & content_terms(t)) / len(terms) for t in targets), default=0.0)


def summary(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"mean": 0.0, "median": 0.0, "max": 0.0}
    return {
        "mean": round(statistics.fmean(values), 3),
        "median": round(statistics.median(values), 3),
        "max": round(max(values), 3),
    }


def overlap_report(personas: Sequence[Any], *, worst: int = 5) -> dict[str, Any]:
    """Per persona: mean / median / max overlap and the ``worst`` (highest) questions."""
    out: dict[str, Any] = {}
    everything: list[float] = []
    grouped: dict[str, dict[str, list[float]]] = {}
    for persona in personas:
        texts = persona.by_key
        rows = []
        for q in persona.questions:
            value = overlap(q.question, [_searchable(texts[t].raw) for t in q.targets])
            rows.append(
                {"id": q.id, "kind": q.kind, "overlap": round(value, 3), "question": q.question}
            )
        values = [r["overlap"] for r in rows]
        everything.extend(values)
        corpus = getattr(persona, "corpus", "personas")
        for r in rows:
            kinds = grouped.setdefault(corpus, {})
            kinds.setdefault(r["kind"], []).append(r["overlap"])
            kinds.setdefault("all", []).append(r["overlap"])
        rows.sort(key=lambda r: (-r["overlap"], r["id"]))
        out[persona.persona] = {
            **summary(values),
            "n": len(values),
            "worst": rows[:worst],
            "per_question": {r["id"]: r["overlap"] for r in rows},
        }
    corpora = {
        corpus: {kind: {**summary(v), "n": len(v)} for kind, v in sorted(kinds.items())}
        for corpus, kinds in sorted(grouped.items())
    }
    return {"overall": summary(everything), "personas": out, "corpora": corpora}


def _searchable(raw: dict[str, Any]) -> str:
    """The target's text as recall sees it (a playbook's name, trigger and steps too)."""
    parts = [raw.get("text", ""), raw.get("name", ""), raw.get("trigger", "")]
    parts.extend(raw.get("steps") or [])
    return " ".join(p for p in parts if p)
