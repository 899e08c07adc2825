"""Reciprocal rank fusion of the recall legs."""

from __future__ import annotations

from dataclasses import dataclass, field

from memory.engine.types import LegHit, MemoryDoc

RRF_RANK_CONSTANT = 30


@dataclass
class Fused:
    id: str
    score: float
    doc: MemoryDoc | None = None  # when a leg carried it (see LegHit)
    leg_ranks: dict[str, int] = field(default_factory=dict)
    leg_scores: dict[str, float] = field(default_factory=dict)


def rrf(
    legs: dict[str, list[LegHit]],
    *,
    rank_constant: int = RRF_RANK_CONSTANT,
    weights: dict[str, float] | None = None,
) -> list[Fused]:
    """Sum of ``weight / (rank_constant + rank)`` over the legs a document appears in, best
    first (every leg weighs 1 unless ``weights`` says otherwise).

    Ties break on the best single-leg rank, then on id, so the order is deterministic.
    """
    fused: dict[str, Fused] = {}
    for leg, hits in legs.items():
        for hit in hits:
            entry = fused.setdefault(hit.id, Fused(id=hit.id, score=0.0))
            if entry.doc is None:
                entry.doc = hit.doc
            entry.score += (weights or {}).get(leg, 1.0) / (rank_constant + hit.rank)
            entry.leg_ranks[leg] = hit.rank
            entry.leg_scores[leg] = hit.score
    return sorted(fused.values(), key=lambda f: (-f.score, min(f.leg_ranks.values()), f.id))
