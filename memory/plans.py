"""Recall plans: what a recall runs (legs, fusion weights, decay, rerank) as one value."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from atlas_platform.exceptions import ValidationError

LEGS = ("lexical", "dense")


@dataclass(frozen=True)
class RecallPlan:
    """How a recall runs: which legs, how they are fused, and what ranks the result. The
    default plan is the product's recall; the evaluation's ablations are other plans.

    ``lexical_weight`` (None: ``ATLAS_RECALL_LEXICAL_WEIGHT``, 1.0 by default) weighs the
    lexical legs in the fusion against the dense ones; ``"confidence"`` weighs each lexical leg
    by its own confidence for this query (``memory.fusion.leg_confidence``). ``time_hints``: a
    time expression in the query adds a time-filtered run of the legs. ``succession``: a
    superseded fact's match counts for the fact that replaced it.

    The other knobs default to the product's settings and are set by the evaluation's sweep
    (docs/recall-quality.md, "Defaults across corpora"): ``rank_constant`` (RRF; None:
    ``ATLAS_RECALL_RANK_CONSTANT``), ``candidates`` (per leg; None: ``ATLAS_RECALL_CANDIDATES``),
    ``decay_offset_days`` / ``decay_scale_days`` (None: the tenant's), and ``window_decay``:
    whether decay also applies inside the time-window legs a time expression adds (False: a
    question that names a time finds that time's memories undecayed); ``time_anchor`` (None:
    ``ATLAS_RECALL_TIME_ANCHOR``): ``clock`` reads time words and decay against recall's
    ``now``, ``history`` against the user's newest memory when that is weeks older.
    ``context_boost`` (None: ``ATLAS_TURN_CONTEXT_BOOST``) weighs a turn's lexical context
    field against its text in the lexical leg (0: the context is not searched).
    ``session_spread`` / ``session_depth`` (None: ``ATLAS_RECALL_SESSION_SPREAD`` /
    ``ATLAS_RECALL_SESSION_DEPTH``): the share of its fused score each turn at the head lends
    to the turns up to ``session_depth`` away in its session (0: no spread).
    ``strip_time_phrase``: the dense legs embed the query without the time phrase its window
    was read from (``memory.query.without_time_phrase``; the lexical legs keep every word).
    """

    legs: tuple[str, ...] = LEGS
    lexical_weight: float | Literal["confidence"] | None = None
    rerank: bool = True
    decay: bool = True
    time_hints: bool = True
    succession: bool = True
    rank_constant: int | None = None
    candidates: int | None = None
    decay_offset_days: float | None = None
    decay_scale_days: float | None = None
    window_decay: bool | None = None
    time_anchor: Literal["clock", "history"] | None = None
    context_boost: float | None = None
    session_spread: float | None = None
    session_depth: int | None = None
    strip_time_phrase: bool = False

    def __post_init__(self) -> None:
        if not self.legs or set(self.legs) - set(LEGS):
            raise ValidationError(
                "legs must be a non-empty subset of lexical, dense.", code="bad_legs"
            )
        if self.rank_constant is not None and not 0 <= self.rank_constant <= 1000:
            raise ValidationError("rank_constant must be 0-1000.", code="bad_plan")
        if self.context_boost is not None and not 0.0 <= self.context_boost <= 10.0:
            raise ValidationError("context_boost must be 0-10.", code="bad_plan")
        if self.session_spread is not None and not 0.0 <= self.session_spread <= 1.0:
            raise ValidationError("session_spread must be 0-1.", code="bad_plan")
        if self.session_depth is not None and not 0 <= self.session_depth <= 10:
            raise ValidationError("session_depth must be 0-10.", code="bad_plan")
        if self.candidates is not None and not 1 <= self.candidates <= 1000:
            raise ValidationError("candidates must be 1-1000.", code="bad_plan")


DEFAULT_PLAN = RecallPlan()
