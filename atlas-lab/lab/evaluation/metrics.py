"""Retrieval metrics over ranked results: recall at k and mean reciprocal rank."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

KS = (1, 5, 10)


def first_hit_rank(ranked_keys: Sequence[str | None], targets: Iterable[str]) -> int | None:
    """1-based rank of the first result that is one of ``targets`` (None: not returned)."""
    wanted = set(targets)
    for rank, key in enumerate(ranked_keys, start=1):
        if key is not None and key in wanted:
            return rank
    return None


Rank = int | None | list[int | None]
"""A question's result: the rank of its first hit (any target counts), or, for a question
whose targets are all evidence (``match: all``), the rank of each target."""


def evidence_ranks(ranked_keys: Sequence[str | None], targets: Iterable[str]) -> list[int | None]:
    """The 1-based rank of each target (None: not returned)."""
    where = {key: n for n, key in enumerate(ranked_keys, start=1) if key is not None}
    return [where.get(t) for t in dict.fromkeys(targets)]


def found(rank: Rank, k: int) -> float:
    """How much of a question is answered in the top ``k``: 1 or 0 for a first-hit rank, the
    share of its evidence for a list of ranks."""
    if isinstance(rank, list):
        return sum(1 for r in rank if r is not None and r <= k) / len(rank) if rank else 0.0
    return 1.0 if rank is not None and rank <= k else 0.0


def first(rank: Rank) -> int | None:
    if isinstance(rank, list):
        present = [r for r in rank if r is not None]
        return min(present) if present else None
    return rank


@dataclass(frozen=True)
class Scores:
    n: int
    r1: float
    r5: float
    r10: float
    mrr: float

    def as_dict(self) -> dict[str, float | int]:
        return {"n": self.n, "r@1": self.r1, "r@5": self.r5, "r@10": self.r10, "mrr": self.mrr}


def scores(ranks: Sequence[Rank]) -> Scores:
    """R@1/5/10 (mean over questions of ``found``: whether the first hit ranks within k, or
    the share of the evidence that does) and MRR (mean of 1/first rank, 0 for a miss),
    rounded to 4 places."""
    n = len(ranks)
    if n == 0:
        return Scores(0, 0.0, 0.0, 0.0, 0.0)

    def at(k: int) -> float:
        return round(sum(found(r, k) for r in ranks) / n, 4)

    firsts = [first(r) for r in ranks]
    mrr = round(sum(1.0 / r for r in firsts if r is not None) / n, 4)
    return Scores(n=n, r1=at(1), r5=at(5), r10=at(10), mrr=mrr)


@dataclass(frozen=True)
class Paired:
    """The full pipeline against another configuration at one cut-off, question by question:
    ``better`` = found by full only, ``worse`` = found by the other only; ``p`` = the two-sided
    exact McNemar test of those discordant pairs (1.0 when there are none)."""

    k: int
    better: int
    worse: int
    p: float

    def as_dict(self) -> dict[str, float | int]:
        return {"k": self.k, "better": self.better, "worse": self.worse, "p": self.p}


def mcnemar_exact(better: int, worse: int) -> float:
    """Two-sided exact McNemar p-value: under "no difference" each discordant question is a
    fair coin, so the smaller count is binomial(better + worse, 1/2)."""
    n = better + worse
    if n == 0:
        return 1.0
    tail: float = sum(math.comb(n, i) for i in range(min(better, worse) + 1)) / 2**n
    return round(min(1.0, 2 * tail), 4)


def paired(full: Sequence[Rank], other: Sequence[Rank], k: int) -> Paired:
    """Compare two runs over the same questions (same order) at cut-off ``k`` (a question
    with several evidence targets counts as found when all of them are)."""

    def hit(rank: Rank) -> bool:
        return found(rank, k) >= 1.0

    better = sum(1 for a, b in zip(full, other, strict=True) if hit(a) and not hit(b))
    worse = sum(1 for a, b in zip(full, other, strict=True) if hit(b) and not hit(a))
    return Paired(k=k, better=better, worse=worse, p=mcnemar_exact(better, worse))
