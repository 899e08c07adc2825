"""Reciprocal rank fusion of the recall legs, and how much to trust a leg for one query."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from memory.engine.types import LegHit, Neighbours
from memory.query import content_word_count, is_question

# Smaller than the source design's 30, which ranks a pool for a cross-encoder to reorder. With
# no reranker (the default: none ships in a registry package) the fused order is what recall
# returns, and at 30 a middling match in both legs (dense 8th, lexical 6th at half weight)
# outranks the dense leg's second best: 1/38 + 0.5/36 > 1/32. At 5 a leg's top ranks count for
# more than turning up twice: 1/13 + 0.5/11 < 1/7. A reranker reads every candidate, so its
# order does not depend on this. Measured in atlas-lab/lab/docs/recall-notebook.md ("session 4").
RRF_RANK_CONSTANT = 5
# A turn with fewer content words than this (memory.query.content_word_count) is small talk to
# the turn prior ("Oh no, what happened?", "Always, what's up").
SHORT_TURN_WORDS = 5
# leg_confidence compares a leg's top score with the one at this rank: recall's default page
# (k=10), so the question is whether the best hit stands out from what a page would show.
CONFIDENCE_DEPTH = 10


@dataclass
class Fused:
    id: str
    score: float
    leg_ranks: dict[str, int] = field(default_factory=dict)
    leg_scores: dict[str, float] = field(default_factory=dict)


def best_first(fused: Iterable[Fused]) -> list[Fused]:
    """The fused order: score, then the best rank any leg gave, then the id (deterministic)."""
    return sorted(fused, key=lambda f: (-f.score, min(f.leg_ranks.values()), f.id))


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
            entry.score += (weights or {}).get(leg, 1.0) / (rank_constant + hit.rank)
            entry.leg_ranks[leg] = hit.rank
            entry.leg_scores[leg] = hit.score
    return best_first(fused.values())


def spread_to_neighbours(
    fused: list[Fused], neighbours: dict[str, Neighbours], *, weight: float
) -> list[Fused]:
    """``fused`` with every turn in ``neighbours`` lending ``weight`` times its fused score to
    the turns around it in its session, divided by their distance (the turn next to it gets
    all of that, the one after that half), best first again.

    A conversation says a thing across turns: "They cut the whole data team today" is what the
    question asks about, "Oh Sam, I'm so sorry" (the turn after it) is what holds its name,
    and "The doctor said my blood pressure was high, so" answers why coffee stopped, two turns
    after "I've quit coffee". A turn next to strong hits is likely part of the same exchange.
    Bonuses are computed from the fused scores before any is added (a turn does not lend what
    it borrowed), and a turn no leg found joins the candidates with its bonus alone. A turn
    that borrowed carries ``leg_ranks["session"]``: the fused rank of the best turn that lent
    to it (``leg_scores["session"]``: the bonus)."""
    if weight <= 0.0 or not neighbours:
        return fused
    ranks = {f.id: n for n, f in enumerate(fused, start=1)}
    lent: dict[str, tuple[float, int]] = {}
    for f in fused:
        around = neighbours.get(f.id)
        if around is None:
            continue
        for side in (around.before, around.after):
            for distance, neighbour in enumerate(side, start=1):
                bonus, best = lent.get(neighbour, (0.0, ranks[f.id]))
                lent[neighbour] = (bonus + weight * f.score / distance, min(best, ranks[f.id]))
    spread = {f.id: f for f in fused}
    for memory_id, (bonus, best) in lent.items():
        before = spread.get(memory_id) or Fused(id=memory_id, score=0.0)
        spread[memory_id] = replace(
            before,
            score=before.score + bonus,
            leg_ranks={**before.leg_ranks, "session": best},
            leg_scores={**before.leg_scores, "session": round(bonus, 6)},
        )
    return best_first(spread.values())


def rank_score(leg_ranks: dict[str, int], *, rank_constant: int = RRF_RANK_CONSTANT) -> float:
    """What an agent is shown of a hit's relevance: reciprocal rank fusion of its leg ranks
    with every leg weighing 1, so a function of those ranks alone. Recall's own fused score may
    weigh a lexical leg by its BM25 scores (``leg_confidence``), and a weight solved back out
    of it would show a ratio of raw lexical scores (term statistics); this never carries one."""
    return round(sum(1.0 / (rank_constant + rank) for rank in leg_ranks.values()), 6)


def leg_confidence(hits: list[LegHit], *, depth: int = CONFIDENCE_DEPTH) -> float:
    """How far a leg's best hit stands out from its ``depth``-th, as a share of the best
    score: 0 for a flat ranking, towards 1 when the best hit towers over the rest. ``hits``
    are best first; with fewer than ``depth`` hits, the ``depth``-th is a document that did
    not match at all, score 0, so the confidence is 1 (a word only a few documents hold).

    Only for scores where 0 means "no evidence" (BM25, also after the signal multipliers), so
    that a ratio of two scores means something; a cosine similarity has no such zero. A
    lexical leg whose best hit shares a rare word with the query (an error code, a product
    name) scores high; one whose hits each share a common word or two with it is flat, and
    its order says little.
    """
    if not hits or hits[0].score <= 0.0:
        return 0.0
    top = hits[0].score
    floor = hits[depth - 1].score if len(hits) >= depth else 0.0
    return min(1.0, max(0.0, (top - floor) / top))


def credit_successors(legs: dict[str, list[LegHit]]) -> dict[str, list[LegHit]]:
    """The legs with every superseded fact's hit given to the fact that replaced it.

    A question about a slot ("what version is my phone on?") matches the old value's wording as
    well as the new one's, often better (the old fact was said more often, or in the question's
    words); the old fact is not an answer, but its match is evidence for its successor. So a
    superseded hit counts as a hit of its successor at the same rank and score, unless the
    successor already holds a better one in that leg. A chain is followed as far as the legs'
    hits show it (A replaced by B, B by C: A's hit goes to C if B is among the hits, else to B,
    which recall then drops as superseded). Legs of a recall that excludes superseded facts
    only; the hit carries no document (recall reads the successor's).
    """
    successor = {
        hit.id: hit.superseded_by for hits in legs.values() for hit in hits if hit.superseded_by
    }

    def current(doc_id: str) -> str:
        seen = {doc_id}
        while doc_id in successor and successor[doc_id] not in seen:
            doc_id = successor[doc_id]
            seen.add(doc_id)
        return doc_id

    credited: dict[str, list[LegHit]] = {}
    for leg, hits in legs.items():
        taken: set[str] = set()
        out = []
        for hit in hits:
            if hit.superseded_by:
                hit = LegHit(id=current(hit.id), score=hit.score, rank=hit.rank)
            if hit.id not in taken:
                taken.add(hit.id)
                out.append(hit)
        credited[leg] = out
    return credited


def cap_per_session(
    fused: list[Fused], session_of: dict[str, str], *, cap: int, head: int
) -> list[Fused]:
    """``fused`` with at most ``cap`` turns of any one session among its first ``head``: a
    turn past its session's cap waits, in order, until the head is full, then the waiting
    turns follow (nothing is dropped). Documents without a session (facts, playbooks, the
    catalog, turns sent without one) are never held back.

    A question whose evidence lies in several sessions ("How did Sam go from redundancy to a
    new job?") finds one session's turns first, and they, with the spread, can fill the page;
    a cap leaves room for the next session's best turn."""
    if cap <= 0:
        return fused
    taken: dict[str, int] = {}
    first: list[Fused] = []
    waiting: list[Fused] = []
    for f in fused:
        session = session_of.get(f.id)
        if len(first) >= head or session is None:
            (first if len(first) < head else waiting).append(f)
            continue
        if taken.get(session, 0) >= cap:
            waiting.append(f)
            continue
        taken[session] = taken.get(session, 0) + 1
        first.append(f)
    return first + waiting


def turn_prior(fused: list[Fused], turns: dict[str, str], *, factor: float) -> list[Fused]:
    """``fused`` with the score of each turn in ``turns`` (id -> text) multiplied by
    ``factor`` when it is a question, and again when it has fewer than ``SHORT_TURN_WORDS``
    content words, best first again (``best_first``). ``factor`` 1 changes nothing.

    A recall looks for the turn that holds the answer. A conversation's small talk rarely
    does, and a short question shares the question's shape, so its vector sits close to it:
    "Oh no, what happened?" and "How's your Wednesday going?" outranked the evidence of
    conversational questions ("Issue 33: a turn prior" in atlas-lab/lab/docs/recall-notebook.md).
    Facts, playbooks and the catalog are not in ``turns`` and keep their scores."""
    if factor == 1.0 or not turns:
        return fused
    out = []
    for f in fused:
        text = turns.get(f.id)
        if text is not None:
            scale = factor if is_question(text) else 1.0
            if content_word_count(text) < SHORT_TURN_WORDS:
                scale *= factor
            if scale != 1.0:
                f = replace(f, score=f.score * scale)
        out.append(f)
    return best_first(out)
