"""Recall plans: what a recall runs (legs, fusion weights, decay, rerank) as one value.

A ``RecallPlan`` is what a caller asks for: ``None`` fields read the deployment's settings
(``settings.ATLAS_RECALL``). ``resolve_plan`` turns it into a ``ResolvedPlan``, every knob
decided, once per recall; the pipeline's steps read only that."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from atlas_platform.config import RecallSettings
from atlas_platform.exceptions import ValidationError

LEGS = ("lexical", "dense")

LexicalWeight = float | Literal["confidence"]
TimeAnchor = Literal["clock", "history"]


@dataclass(frozen=True)
class RecallPlan:
    """How a recall runs: which legs, how they are fused, and what ranks the result. The
    default plan is the product's recall; the evaluation's ablations are other plans.

    Methods that were measured and not kept (atlas-lab/lab/docs/recall-notebook.md) have no setting;
    their fields default to what was kept, and a lab plan sets them to try the others:

    - ``lexical_weight`` (1.0: plain RRF) weighs the lexical legs in the fusion against the
      dense ones; ``"confidence"`` weighs each lexical leg by its own confidence for this
      query (``memory.fusion.leg_confidence``).
    - ``window_decay`` (True): decay also applies inside the time-window legs a time
      expression adds (False: a question that names a time finds that time's memories
      undecayed).
    - ``time_anchor`` (``history``): time words and decay are read against the user's newest
      memory when that is weeks older than recall's ``now`` (``clock``: always ``now``).
    - ``strip_time_phrase`` (False): the dense legs embed the query without the time phrase its
      window was read from (``memory.query.without_time_phrase``).
    - ``feedback_docs`` (0: off): pseudo-relevance feedback from the fused top ``feedback_docs``
      (read under the asker's scope): ``feedback_terms`` of their words the query lacks added
      to a second lexical leg (``memory.query.feedback_terms``), and with ``feedback_dense``
      > 0 a second dense leg on the query vector plus that share of their mean vector; the
      feedback legs weigh ``feedback_weight`` in the fusion.
    - ``session_cap`` (0: off): at most that many turns of one session in the returned head
      (``memory.fusion.cap_per_session``): a multi-hop question's evidence lies in several.

    The knobs a deployment may set read ``settings.ATLAS_RECALL`` when left ``None``
    (docs/recall-quality.md, "Defaults"): ``rank_constant`` (RRF), ``candidates`` (per leg),
    ``context_boost`` (a turn's lexical context field against its text in the lexical leg; 0:
    not searched), ``session_spread`` / ``session_depth`` (the share of its fused score each
    turn at the head lends to the turns up to ``session_depth`` away in its session; 0: no
    spread), ``turn_prior`` (a fused head turn that is a question, and one with few content
    words, scores that times its score, ``memory.fusion.turn_prior``; 1: off).
    ``decay_offset_days`` / ``decay_scale_days`` (None: the tenant's).

    Switches: ``rerank`` (the configured reranker, if any), ``decay``, ``time_hints`` (a time
    expression in the query adds a time-filtered run of the legs), ``succession`` (a superseded
    fact's match counts for the fact that replaced it).
    """

    legs: tuple[str, ...] = LEGS
    lexical_weight: LexicalWeight = 1.0
    rerank: bool = True
    decay: bool = True
    time_hints: bool = True
    succession: bool = True
    rank_constant: int | None = None
    candidates: int | None = None
    decay_offset_days: float | None = None
    decay_scale_days: float | None = None
    window_decay: bool = True
    time_anchor: TimeAnchor = "history"
    context_boost: float | None = None
    session_spread: float | None = None
    session_depth: int | None = None
    turn_prior: float | None = None
    strip_time_phrase: bool = False
    feedback_docs: int = 0
    feedback_terms: int = 0
    feedback_dense: float = 0.0
    feedback_weight: float = 0.5
    session_cap: int = 0

    def __post_init__(self) -> None:
        if not self.legs or set(self.legs) - set(LEGS):
            raise ValidationError(
                "legs must be a non-empty subset of lexical, dense.", code="bad_legs"
            )
        if self.lexical_weight != "confidence" and not 0.0 <= self.lexical_weight <= 10.0:
            raise ValidationError("lexical_weight must be 'confidence' or 0-10.", code="bad_plan")
        if self.time_anchor not in ("clock", "history"):
            raise ValidationError("time_anchor must be clock or history.", code="bad_plan")
        if self.rank_constant is not None and not 0 <= self.rank_constant <= 1000:
            raise ValidationError("rank_constant must be 0-1000.", code="bad_plan")
        if self.context_boost is not None and not 0.0 <= self.context_boost <= 10.0:
            raise ValidationError("context_boost must be 0-10.", code="bad_plan")
        if self.session_spread is not None and not 0.0 <= self.session_spread <= 1.0:
            raise ValidationError("session_spread must be 0-1.", code="bad_plan")
        if self.session_depth is not None and not 0 <= self.session_depth <= 10:
            raise ValidationError("session_depth must be 0-10.", code="bad_plan")
        if self.turn_prior is not None and not 0.0 <= self.turn_prior <= 1.0:
            raise ValidationError("turn_prior must be 0-1.", code="bad_plan")
        if self.candidates is not None and not 1 <= self.candidates <= 1000:
            raise ValidationError("candidates must be 1-1000.", code="bad_plan")
        if not 0 <= self.feedback_docs <= 20 or not 0 <= self.feedback_terms <= 50:
            raise ValidationError(
                "feedback_docs must be 0-20 and feedback_terms 0-50.", code="bad_plan"
            )
        if not 0.0 <= self.feedback_dense <= 10.0 or not 0.0 <= self.feedback_weight <= 10.0:
            raise ValidationError(
                "feedback_dense and feedback_weight must be 0-10.", code="bad_plan"
            )
        if not 0 <= self.session_cap <= 50:
            raise ValidationError("session_cap must be 0-50.", code="bad_plan")


DEFAULT_PLAN = RecallPlan()


@dataclass(frozen=True)
class ResolvedPlan:
    """A ``RecallPlan`` with every setting it left open decided (``resolve_plan``). The decay
    overrides stay ``None`` for the tenant's own: they resolve against the asker's tenant, not
    the deployment."""

    legs: tuple[str, ...]
    lexical_weight: LexicalWeight
    rerank: bool
    decay: bool
    time_hints: bool
    succession: bool
    rank_constant: int
    candidates: int
    decay_offset_days: float | None
    decay_scale_days: float | None
    window_decay: bool
    time_anchor: TimeAnchor
    context_boost: float
    session_spread: float
    session_depth: int
    turn_prior: float
    strip_time_phrase: bool
    feedback_docs: int = 0
    feedback_terms: int = 0
    feedback_dense: float = 0.0
    feedback_weight: float = 0.5
    session_cap: int = 0

    @property
    def lexical(self) -> bool:
        return "lexical" in self.legs

    @property
    def dense(self) -> bool:
        return "dense" in self.legs

    @property
    def feedback(self) -> bool:
        """Whether pseudo-relevance feedback runs: documents to read and a leg to feed."""
        lexical = self.lexical and self.feedback_terms > 0
        return self.feedback_docs > 0 and (lexical or (self.dense and self.feedback_dense > 0))


def resolve_plan(plan: RecallPlan, config: RecallSettings) -> ResolvedPlan:
    """``plan`` with each field it left ``None`` read from ``config`` (the deployment's
    ``settings.ATLAS_RECALL``)."""
    return ResolvedPlan(
        legs=plan.legs,
        lexical_weight=plan.lexical_weight,
        rerank=plan.rerank,
        decay=plan.decay,
        time_hints=plan.time_hints,
        succession=plan.succession,
        rank_constant=config.rank_constant if plan.rank_constant is None else plan.rank_constant,
        candidates=config.candidates if plan.candidates is None else plan.candidates,
        decay_offset_days=plan.decay_offset_days,
        decay_scale_days=plan.decay_scale_days,
        window_decay=plan.window_decay,
        time_anchor=plan.time_anchor,
        context_boost=config.context_boost if plan.context_boost is None else plan.context_boost,
        session_spread=(
            config.session_spread if plan.session_spread is None else plan.session_spread
        ),
        session_depth=config.session_depth if plan.session_depth is None else plan.session_depth,
        turn_prior=config.turn_prior if plan.turn_prior is None else plan.turn_prior,
        strip_time_phrase=plan.strip_time_phrase,
        feedback_docs=plan.feedback_docs,
        feedback_terms=plan.feedback_terms,
        feedback_dense=plan.feedback_dense,
        feedback_weight=plan.feedback_weight,
        session_cap=plan.session_cap,
    )
