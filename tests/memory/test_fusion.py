"""Fusion and query handling: a leg's confidence, the turn prior, the words the lexical legs
search for."""

from __future__ import annotations

import pytest

from memory.engine.types import LegHit
from memory.fusion import (
    CONFIDENCE_DEPTH,
    RRF_RANK_CONSTANT,
    Fused,
    credit_successors,
    leg_confidence,
    rrf,
    turn_prior,
)
from memory.query import content_word_count, is_question, lexical_terms


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
        assert fused[0].score == pytest.approx(expected / (RRF_RANK_CONSTANT + 1))


def test_a_legs_near_top_hit_outranks_a_middling_match_in_both_legs() -> None:
    # Without a reranker the fused order is the answer: the dense leg's second best must not
    # sink under a document both legs found only half-way down the page.
    dense = [LegHit(id=f"d{n}", score=0.9 - 0.01 * n, rank=n) for n in range(1, 9)]
    dense[7] = LegHit(id="both", score=0.82, rank=8)
    lexical = [LegHit(id=f"l{n}", score=10.0 - n, rank=n) for n in range(1, 7)]
    lexical[5] = LegHit(id="both", score=4.0, rank=6)
    order = [f.id for f in rrf({"dense": dense, "lexical": lexical}, weights={"lexical": 0.5})]
    assert order.index("d2") < order.index("both")
    # The source design's constant, made for a pool a cross-encoder reorders, sinks it.
    wide = rrf({"dense": dense, "lexical": lexical}, weights={"lexical": 0.5}, rank_constant=30)
    assert [f.id for f in wide].index("both") < [f.id for f in wide].index("d2")


def test_a_superseded_hit_is_credited_to_its_successor_at_its_rank() -> None:
    legs = {
        "lexical": [
            LegHit(id="old", score=9.0, rank=1, superseded_by="new"),
            LegHit(id="other", score=5.0, rank=2),
            LegHit(id="new", score=2.0, rank=3),
        ],
        "dense": [
            LegHit(id="new", score=0.8, rank=1),
            LegHit(id="old", score=0.7, rank=2, superseded_by="new"),
        ],
    }
    credited = credit_successors(legs)
    assert [(h.id, h.rank, h.score) for h in credited["lexical"]] == [
        ("new", 1, 9.0),
        ("other", 2, 5.0),
    ]
    # the successor's own better hit stays; the old fact's is dropped
    assert [(h.id, h.rank) for h in credited["dense"]] == [("new", 1)]
    assert all(h.superseded_by is None for h in credited["lexical"])


def test_a_chain_is_followed_as_far_as_the_hits_show_it() -> None:
    legs = {
        "lexical": [
            LegHit(id="a", score=3.0, rank=1, superseded_by="b"),
            LegHit(id="x", score=2.0, rank=2, superseded_by="y"),
        ],
        "dense": [LegHit(id="b", score=0.9, rank=1, superseded_by="c")],
    }
    credited = credit_successors(legs)
    # a -> b -> c (b's link is in the dense leg); x -> y (y's own successor, if any, unseen)
    assert [h.id for h in credited["lexical"]] == ["c", "y"]
    assert [h.id for h in credited["dense"]] == ["c"]
    assert credit_successors({"dense": [LegHit(id="d", score=1.0, rank=1)]})["dense"][0].id == "d"


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


def _fused(*ids: str) -> list[Fused]:
    return [
        Fused(id=i, score=1.0 - 0.05 * n, leg_ranks={"dense": n})
        for n, i in enumerate(ids, start=1)
    ]


def test_the_turn_prior_sinks_small_talk_questions_beneath_the_turn_with_the_answer() -> None:
    turns = {
        "chat": "Oh no, what happened?",  # a question, and three content words: 0.8 x 0.8
        "ask": "Did the Northlight people get back to you about the analyst role?",  # 0.8
        "short": "Haha same",  # two content words: 0.8
        "answer": "Villa in Chania is booked, 10 to 20 August",
    }
    fused = _fused("chat", "ask", "short", "fact", "answer")

    order = turn_prior(fused, turns, factor=0.8)

    assert [f.id for f in order] == ["fact", "answer", "ask", "short", "chat"]
    scores = {f.id: f.score for f in order}
    assert scores["chat"] == pytest.approx(0.95 * 0.64)
    assert scores["ask"] == pytest.approx(0.9 * 0.8)
    assert scores["fact"] == pytest.approx(0.8)  # not a turn: facts keep their score
    assert fused[0].score == pytest.approx(0.95)  # the input is not changed


def test_a_turn_prior_of_one_changes_nothing() -> None:
    fused = _fused("a", "b")
    assert turn_prior(fused, {"a": "What?"}, factor=1.0) == fused


@pytest.mark.parametrize(
    ("text", "question", "words"),
    [
        ("Oh no, what happened?", True, 3),
        ("How's your Wednesday going?", True, 3),
        ('She said "really?"', True, 3),
        ("Fernbank offered! Senior analyst", False, 4),
        ("Is it? It is.", False, 0),  # the last sentence counts
        ("  ", False, 0),
        # no spaces between words: each character counts
        ("\u6211\u4e0a\u4e2a\u6708\u642c\u5230\u4e86\u5317\u4eac\u3002", False, 9),
        ("\u4f60\u53bb\u54ea\u91cc\u4e86\uff1f", True, 5),  # a full-width question mark
        ("\u00bfAd\u00f3nde fuiste?\u00bb", True, 2),  # a closing guillemet after it
    ],
)
def test_a_turn_is_read_as_a_question_and_by_its_content_words(
    text: str, question: bool, words: int
) -> None:
    assert (is_question(text), content_word_count(text)) == (question, words)
