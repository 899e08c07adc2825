"""Fusion and query handling: a leg's confidence, the words the lexical legs search for."""

from __future__ import annotations

import pytest

from memory.engine.types import LegHit
from memory.fusion import CONFIDENCE_DEPTH, leg_confidence, rrf
from memory.query import lexical_terms


def _hits(*scores: float) -> list[LegHit]:
    return [LegHit(id=f"d{n}", score=score, rank=n) for n, score in enumerate(scores, start=1)]


def test_a_flat_leg_has_no_confidence() -> None:
    assert leg_confidence(_hits(*[4.0] * 20)) == 0.0


def test_confidence_is_the_share_the_top_score_stands_above_the_tenth() -> None:
    scores = [10.0, 6.0, 5.0, 4.5, 4.0, 3.8, 3.6, 3.4, 3.2, 3.0, 1.0, 0.5]
    assert leg_confidence(_hits(*scores)) == pytest.approx((10.0 - 3.0) / 10.0)
    assert leg_confidence(_hits(*scores), depth=2) == pytest.approx((10.0 - 6.0) / 10.0)


def test_a_leg_with_fewer_hits_than_the_depth_is_measured_against_no_match() -> None:
    # The tenth document matched nothing (score 0): one match of a rare word is sure.
    assert leg_confidence(_hits(7.5)) == 1.0
    assert leg_confidence(_hits(*[2.0] * (CONFIDENCE_DEPTH - 1))) == 1.0


def test_an_empty_or_scoreless_leg_has_no_confidence() -> None:
    assert leg_confidence([]) == 0.0
    assert leg_confidence(_hits(*[0.0] * 12)) == 0.0


def test_a_towering_top_hit_outweighs_a_flat_legs_best_in_the_fusion() -> None:
    towering = _hits(20.0, *[1.0] * 15)
    flat = _hits(*[5.0 - 0.01 * n for n in range(16)])
    for lexical, expected in ((towering, 1.0 - 1.0 / 20.0), (flat, (5.0 - 4.91) / 5.0)):
        fused = rrf({"lexical": lexical}, weights={"lexical": leg_confidence(lexical)})
        assert fused[0].score == pytest.approx(expected / 31)


@pytest.mark.parametrize(
    ("query", "terms"),
    [
        ("What did we do about the E-204 error?", ["about", "E-204", "error?"]),
        ("how do I reset the hub", ["reset", "hub"]),
        ("Is ERR_ZB_0x1F back?", ["ERR_ZB_0x1F", "back?"]),
        ("what is it?", ["what", "is", "it?"]),  # nothing but function words: all of them
        ("  -- ? ", []),
    ],
)
def test_the_lexical_legs_search_the_querys_content_words(query: str, terms: list[str]) -> None:
    assert lexical_terms(query) == terms
