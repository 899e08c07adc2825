"""A recall plan is resolved once against the deployment's settings (``resolve_plan``): the
fields a plan leaves ``None`` read ``settings.ATLAS_RECALL``, the others are the plan's."""

from __future__ import annotations

import dataclasses

import pytest
from django.core.exceptions import ImproperlyConfigured

from atlas_platform.config import RecallSettings
from atlas_platform.exceptions import ValidationError
from memory.plans import DEFAULT_PLAN, RecallPlan, resolve_plan

CONFIG = RecallSettings(
    candidates=33, rank_constant=7, context_boost=0.3, session_spread=0.4, session_depth=3
)


def test_the_default_plan_takes_every_open_knob_from_the_settings():
    resolved = resolve_plan(DEFAULT_PLAN, CONFIG)

    assert (resolved.candidates, resolved.rank_constant) == (33, 7)
    assert (resolved.context_boost, resolved.session_spread, resolved.session_depth) == (
        0.3,
        0.4,
        3,
    )
    # The methods kept (no setting): plain RRF, decay inside windows, the history anchor.
    assert (resolved.lexical_weight, resolved.window_decay, resolved.time_anchor) == (
        1.0,
        True,
        "history",
    )
    assert resolved.decay_offset_days is None  # the tenant's, resolved at the legs
    assert resolved.turn_prior == 0.8
    assert resolve_plan(RecallPlan(turn_prior=1.0), CONFIG).turn_prior == 1.0  # 1: off


def test_a_plans_own_values_win_over_the_settings():
    plan = RecallPlan(
        legs=("lexical",),
        candidates=80,
        rank_constant=0,
        context_boost=0.0,
        session_spread=0.0,
        session_depth=0,
        lexical_weight="confidence",
        time_anchor="clock",
        window_decay=False,
    )

    resolved = resolve_plan(plan, CONFIG)

    assert resolved.lexical and not resolved.dense
    assert (resolved.candidates, resolved.rank_constant, resolved.context_boost) == (80, 0, 0.0)
    assert (resolved.session_spread, resolved.session_depth) == (0.0, 0)  # 0 is not "unset"
    assert (resolved.lexical_weight, resolved.time_anchor, resolved.window_decay) == (
        "confidence",
        "clock",
        False,
    )


def test_a_resolved_plan_is_frozen():
    resolved = resolve_plan(DEFAULT_PLAN, CONFIG)
    with pytest.raises(dataclasses.FrozenInstanceError):
        resolved.candidates = 1  # type: ignore[misc]


@pytest.mark.parametrize(
    "asked",
    [
        {"lexical_weight": -1.0},
        {"lexical_weight": 11.0},
        {"time_anchor": "sundial"},
        {"legs": ()},
        {"session_spread": 1.5},
        {"turn_prior": 1.2},
    ],
)
def test_a_plan_out_of_bounds_is_refused(asked):
    with pytest.raises(ValidationError):
        RecallPlan(**asked)


@pytest.mark.parametrize(
    ("field", "value", "variable"),
    [
        ("candidates", 0, "ATLAS_RECALL_CANDIDATES"),
        ("rank_constant", 1001, "ATLAS_RECALL_RANK_CONSTANT"),
        ("context_boost", -0.1, "ATLAS_TURN_CONTEXT_BOOST"),
        ("session_depth", 11, "ATLAS_RECALL_SESSION_DEPTH"),
        ("turn_prior", -0.1, "ATLAS_RECALL_TURN_PRIOR"),
        ("max_k", 0, "ATLAS_RECALL_MAX_K"),
        ("rerank_budget_ms", -1, "ATLAS_RERANK_BUDGET_MS"),
    ],
)
def test_recall_settings_out_of_bounds_name_the_variable(field, value, variable):
    with pytest.raises(ImproperlyConfigured, match=variable):
        RecallSettings(**{field: value})
