"""Typed groups of settings, built once by ``atlas_platform.settings`` from the environment.

Each group is a frozen dataclass read as one Django setting (``settings.ATLAS_RECALL``, ...):
its fields are typed and checked when the process starts, so a bad value stops start-up with a
message that names the variable to fix, instead of surfacing inside a request. A test changes
one field with ``dataclasses.replace(settings.ATLAS_RECALL, candidates=80)``.

Nothing here imports an app: the settings module imports it before Django is set up.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ImproperlyConfigured


def _within(name: str, value: float, low: float, high: float) -> None:
    if not low <= value <= high:
        raise ImproperlyConfigured(f"{name} must be from {low:g} to {high:g}, not {value!r}.")


@dataclass(frozen=True)
class RecallSettings:
    """Recall's knobs that a deployment may set (docs/recall-quality.md, "Defaults"). Each was
    chosen across corpora on dev splits; ``RecallPlan`` fields left ``None`` read them. Methods
    that were measured and not kept have no setting: the lab reaches them through
    ``RecallPlan`` (its fields' defaults are the kept methods)."""

    max_k: int = 50  # ATLAS_RECALL_MAX_K: the most hits one recall may ask for
    candidates: int = 40  # ATLAS_RECALL_CANDIDATES: ids each leg returns
    rank_constant: int = 5  # ATLAS_RECALL_RANK_CONSTANT: RRF's rank constant
    context_boost: float = 0.5  # ATLAS_TURN_CONTEXT_BOOST: a turn's lexical context's weight
    session_spread: float = 0.25  # ATLAS_RECALL_SESSION_SPREAD: share a head turn lends
    session_depth: int = 2  # ATLAS_RECALL_SESSION_DEPTH: turns each way it lends to
    rerank_budget_ms: int = 400  # ATLAS_RERANK_BUDGET_MS: past it, the fused order stands

    def __post_init__(self) -> None:
        # The same bounds as RecallPlan's (memory/plans.py), so any setting is a valid plan.
        _within("ATLAS_RECALL_MAX_K", self.max_k, 1, 1000)
        _within("ATLAS_RECALL_CANDIDATES", self.candidates, 1, 1000)
        _within("ATLAS_RECALL_RANK_CONSTANT", self.rank_constant, 0, 1000)
        _within("ATLAS_TURN_CONTEXT_BOOST", self.context_boost, 0.0, 10.0)
        _within("ATLAS_RECALL_SESSION_SPREAD", self.session_spread, 0.0, 1.0)
        _within("ATLAS_RECALL_SESSION_DEPTH", self.session_depth, 0, 10)
        _within("ATLAS_RERANK_BUDGET_MS", self.rerank_budget_ms, 0, 60_000)

    @classmethod
    def from_env(cls, env: Any) -> RecallSettings:
        d = cls()
        return cls(
            max_k=env.int("ATLAS_RECALL_MAX_K", default=d.max_k),
            candidates=env.int("ATLAS_RECALL_CANDIDATES", default=d.candidates),
            rank_constant=env.int("ATLAS_RECALL_RANK_CONSTANT", default=d.rank_constant),
            context_boost=env.float("ATLAS_TURN_CONTEXT_BOOST", default=d.context_boost),
            session_spread=env.float("ATLAS_RECALL_SESSION_SPREAD", default=d.session_spread),
            session_depth=env.int("ATLAS_RECALL_SESSION_DEPTH", default=d.session_depth),
            rerank_budget_ms=env.int("ATLAS_RERANK_BUDGET_MS", default=d.rerank_budget_ms),
        )


# Settings of recall methods measured and not kept (atlas-lab/lab/docs/recall-notebook.md):
# the variable -> what was kept, and the RecallPlan field the lab sets to try the method again.
RETIRED_SETTINGS = {
    "ATLAS_RECALL_LEXICAL_WEIGHT": (
        "plain RRF (1.0) was kept across corpora",
        "RecallPlan.lexical_weight",
    ),
    "ATLAS_RECALL_WINDOW_DECAY": (
        "decay inside the time-window legs was kept",
        "RecallPlan.window_decay",
    ),
    "ATLAS_RECALL_TIME_ANCHOR": (
        "the history anchor (time words read as of an old history's newest memory) was kept",
        "RecallPlan.time_anchor",
    ),
}


def refuse_retired(environ: Mapping[str, str]) -> None:
    """Stop start-up when a retired recall setting is still in the environment: silently
    ignoring it would run another recall than the operator asked for."""
    for name, (kept, field) in RETIRED_SETTINGS.items():
        if name in environ or f"{name}_FILE" in environ:
            raise ImproperlyConfigured(
                f"{name} is retired: {kept} (docs/recall-quality.md). Remove it from the "
                f"environment; the lab measures the alternatives through {field}."
            )
