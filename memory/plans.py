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

    ``lexical_weight`` (None: ``ATLAS_RECALL_LEXICAL_WEIGHT``, 0.5 by default) weighs the
    lexical legs in the fusion against the dense ones; ``"confidence"`` weighs each lexical leg
    by its own confidence for this query (``memory.fusion.leg_confidence``). ``time_hints``: a
    time expression in the query adds a time-filtered run of the legs. ``succession``: a
    superseded fact's match counts for the fact that replaced it.
    """

    legs: tuple[str, ...] = LEGS
    lexical_weight: float | Literal["confidence"] | None = None
    rerank: bool = True
    decay: bool = True
    time_hints: bool = True
    succession: bool = True

    def __post_init__(self) -> None:
        if not self.legs or set(self.legs) - set(LEGS):
            raise ValidationError(
                "legs must be a non-empty subset of lexical, dense.", code="bad_legs"
            )


DEFAULT_PLAN = RecallPlan()
