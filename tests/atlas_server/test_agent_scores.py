"""Agents get ranks, never raw lexical scores: a recall hit's ``score`` is made of its leg
ranks alone, also when recall weighs the lexical leg by its BM25 scores (``confidence``, a
plan the lab can run; the product's plan weighs every leg 1)."""

from __future__ import annotations

import pytest

from memory.api import views
from memory.fusion import RRF_RANK_CONSTANT
from memory.plans import RecallPlan
from memory.services.recall import memory_recall

pytestmark = pytest.mark.usefixtures("store")
RANKING = {"score", "rank", "leg_ranks"}


def rank_only(leg_ranks: dict[str, int]) -> float:
    return round(sum(1 / (RRF_RANK_CONSTANT + r) for r in leg_ranks.values()), 6)


def test_recall_scores_carry_ranks_only_under_confidence_weighting(
    api, alice, alice_token, monkeypatch
):
    confidence = RecallPlan(lexical_weight="confidence")
    monkeypatch.setitem(views.RECALL_MODES, "hybrid", confidence)
    padding = ["", "on a grey day", "after the long winter storm", "with friends and a dog"]
    for n in range(14):
        text = f"Walked along the harbour {padding[n % 4]} number {n}"
        created = api.post(
            "users/alice/memories", {"text": text, "memory_type": "semantic"}, token=alice_token
        )
        assert created.status_code == 201

    response = api.post("users/alice/recall", {"query": "harbour", "k": 10}, token=alice_token)

    assert response.status_code == 200
    hits = response.json()["hits"]
    assert len(hits) == 10
    for hit in hits:
        assert "leg_scores" not in hit and "_score" not in hit
        assert hit["score"] == rank_only(hit["leg_ranks"]), hit
    # The weighting is on: recall's own fused score differs, so showing it would show BM25.
    own = memory_recall(user=alice, query="harbour", k=10, track_usage=False, plan=confidence)
    assert any(h.score != rank_only(h.leg_ranks) for h in own.hits)
