"""The method pieces recall uses and the eval measures: time expressions in a query, RRF leg
weights, a time window preferring its memories, a playbook's embedding text."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memory.plans import RecallPlan
from memory.query import parse_time_window, without_time_phrase

NOW = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)


# --- time expressions -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("what did we try last March", "2026-03-01", "2026-03-31"),
        ("the bulbs in January", "2026-01-01", "2026-01-31"),
        ("back in the winter", "2025-12-01", "2026-02-28"),
        ("what broke last winter", "2025-12-01", "2026-02-28"),
        ("what happened yesterday", "2026-06-30", "2026-07-01"),
        ("anything from last year", "2025-01-01", "2025-12-31"),
        ("the reset two weeks ago", "2026-06-12", "2026-06-22"),
        ("over Christmas", "2025-12-15", "2026-01-08"),
        ("a couple of weeks back", "2026-06-12", "2026-06-22"),
        ("at the start of May", "2026-05-01", "2026-05-16"),
        ("early spring", "2026-03-01", "2026-05-31"),
        ("since April", "2026-04-01", "2026-07-01"),
        ("in June, I think", "2026-06-01", "2026-06-30"),
        ("in August", "2025-08-01", "2025-08-31"),
    ],
)
def test_time_expressions_become_windows_before_now(text: str, start: str, end: str) -> None:
    window = parse_time_window(text, NOW)
    assert window is not None
    assert window.start.date().isoformat() == start
    assert window.end.date().isoformat() == end
    assert window.end <= NOW


@pytest.mark.parametrize(
    "text",
    [
        "how do I reset the hub",
        "may I change the colour",
        "what is the wifi name",
        "our routine when it gets hot in summer",
        "get the colours back",
    ],
)
def test_no_time_expression_no_window(text: str) -> None:
    assert parse_time_window(text, NOW) is None


def test_last_month_name_in_that_month_means_a_year_ago() -> None:
    window = parse_time_window("last July", NOW)
    assert window is not None and window.start.year == 2025


# --- fusion, the time leg, playbook text ------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "embedded"),
    [
        ("What did Lena buy in March?", "What did Lena buy?"),
        ("How was Tom's running going IN JULY?", "How was Tom's running going?"),
        ("What happened two weeks ago at the allotment?", "What happened at the allotment?"),
        ("recently", "recently"),  # the phrase is all there is: kept
        ("Which café did we try?", "Which café did we try?"),  # no window: unchanged
    ],
)
def test_the_dense_leg_can_embed_the_question_without_its_time_phrase(
    text: str, embedded: str
) -> None:
    assert without_time_phrase(text, parse_time_window(text, NOW)) == embedded


def test_rrf_weights_scale_a_legs_contribution() -> None:
    from memory.engine.types import LegHit
    from memory.fusion import RRF_RANK_CONSTANT, rrf

    legs = {"lexical": [LegHit("a", 9.0, 1)], "dense": [LegHit("b", 0.9, 2)]}
    assert [f.id for f in rrf(legs)] == ["a", "b"]
    fused = rrf(legs, weights={"lexical": 0.5})
    assert [f.id for f in fused] == ["b", "a"]
    assert fused[1].score == pytest.approx(0.5 / (RRF_RANK_CONSTANT + 1))


def test_a_time_expression_prefers_memories_from_that_window(
    settings: Any, tmp_path: Path, db: None
) -> None:
    from memory.services.recall import memory_recall
    from memory.services.writes import memory_turn_record
    from tenants.models import Tenant, User

    settings.ATLAS_MEMORY_BACKEND = "embedded"
    settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")
    tenant = Tenant.objects.create(slug="acme", name="Acme")
    user = User.objects.create(tenant=tenant, external_id="alice")
    march = memory_turn_record(
        user=user,
        text="The boiler pressure dropped to 0.5 bar again.",
        timestamp=datetime(2026, 3, 12, 9, tzinfo=UTC),
    ).episode
    june = memory_turn_record(
        user=user,
        text="The boiler pressure dropped to 0.5 bar again!",
        timestamp=datetime(2026, 6, 20, 9, tzinfo=UTC),
    ).episode
    question = "what happened with the boiler pressure last March"
    hinted = memory_recall(user=user, query=question, now=NOW, track_usage=False)
    assert hinted.time_window is not None and hinted.time_window.start.month == 3
    assert hinted.hits[0].doc.id == march.id
    assert {h.doc.id for h in hinted.hits} >= {march.id, june.id}  # a preference, not a filter
    plain = memory_recall(user=user, query=question, now=NOW, plan=RecallPlan(time_hints=False))
    assert plain.time_window is None
    assert "lexical_time" not in plain.hits[0].leg_ranks


def test_a_playbook_is_embedded_with_its_name_and_trigger() -> None:
    from memory.services.writes import embedding_text

    assert embedding_text("semantic", "Sam lives in York.", name="x", trigger="y") == (
        "Sam lives in York."
    )
    assert embedding_text(
        "procedural", "Flip the breaker back.", name="Reset the fuse", trigger="power is out"
    ) == ("Reset the fuse. power is out. Flip the breaker back.")
    assert embedding_text("procedural", "Flip it.", name=None, trigger=" ") == "Flip it."


def test_the_plan_knobs_are_checked_and_reach_the_legs() -> None:
    from datetime import timedelta

    from atlas_platform.exceptions import ValidationError
    from memory.engine.types import LegQuery, Ranking, RecallFilter
    from memory.query import TimeWindow
    from memory.services.recall import _windowed

    with pytest.raises(ValidationError):
        RecallPlan(rank_constant=-1)
    with pytest.raises(ValidationError):
        RecallPlan(candidates=0)
    now = datetime(2026, 6, 1, tzinfo=UTC)
    query = LegQuery(text="q", vector=None, filter=RecallFilter(), ranking=Ranking(), now=now)
    window = TimeWindow(start=now - timedelta(days=30), end=now, phrase="last month")
    decayed = _windowed(query, window)
    undecayed = _windowed(query, window, decay=False)
    assert decayed.ranking.apply_decay and not undecayed.ranking.apply_decay
    assert undecayed.filter.since == window.start and not undecayed.filter.include_catalog
    assert query.ranking.apply_decay  # the main legs keep their decay


@pytest.mark.parametrize(
    "text",
    [
        "what did I say 5000 years ago",
        "1000000000 weeks ago we met",
        "99999999999999999999 days ago",
        "3000 years back",
        "1" * 5000 + " days ago",
    ],
)
def test_a_time_phrase_before_year_one_is_no_window_not_an_error(text):
    assert parse_time_window(text, NOW) is None


@pytest.mark.django_db
def test_a_turn_with_a_far_past_phrase_is_stored_once_and_recalled(settings, tmp_path, acme):
    """It used to fail after storing the turn (a retry stored it twice) and broke every later
    consolidation of the user."""
    from memory.services.common import backend
    from memory.services.scoping import writer_scope
    from memory.services.writes import memory_turn_record
    from tenants.models import User

    settings.ATLAS_MEMORY_BACKEND = "embedded"
    settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")
    user = User.objects.create(tenant=acme, external_id="far")
    memory_turn_record(user=user, text="what happened 5000 years ago, 1000000000 weeks ago?")
    scope = writer_scope(tenant_id=user.memory_tenant_id, user_id=user.memory_id)
    assert backend().count(scope)["episodic"] == 1


@pytest.mark.django_db
@pytest.mark.parametrize("strip", [True, False])
def test_the_dense_leg_embeds_what_the_plan_says(settings, tmp_path, alice, monkeypatch, strip):
    from memory.services import recall as recall_module
    from memory.services.common import embedder

    settings.ATLAS_MEMORY_BACKEND = "embedded"
    settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")
    real, asked = embedder(), []

    class Recording:
        def embed_query(self, text: str) -> list[float]:
            asked.append(text)
            return real.embed_query(text)

    monkeypatch.setattr(recall_module, "embedder", Recording)
    question = "What did Lena buy in March?"
    result = recall_module.memory_recall(
        user=alice,
        query=question,
        track_usage=False,
        now=NOW,
        plan=RecallPlan(strip_time_phrase=strip),
    )
    assert result.time_window is not None and result.time_window.phrase == "in march"
    assert asked == (["What did Lena buy?"] if strip else [question])
