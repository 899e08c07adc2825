"""Choosing recall defaults across corpora: every knob swept on the dev split, one rule.

The rule (docs/recall-quality.md, "Defaults across corpora"): a setting's score is the WORST
corpus's dev R@10 (each corpus weighs the same, however many questions it has); the best score
wins; ties (equal to 3 decimals) go to the higher mean of the corpora's dev R@10, then the
higher mean dev R@5, then to the current default (no change without evidence). Knobs are
swept one at a time from the current defaults (coordinate ascent), in a fixed order, for a
fixed number of rounds; each round starts from the previous round's choices.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from lab.evaluation.corpus import LoadedRun, Persona, Question
from lab.evaluation.metrics import Rank, evidence_ranks, first_hit_rank, scores
from lab.evaluation.runner import K, select_questions
from memory.public import RecallPlan, ResolvedPlan, TimeAnchor

# The knobs and the values tried; the first value of each is not special (the current default
# is whatever the starting plan holds).
KNOBS: dict[str, tuple[Any, ...]] = {
    "lexical_weight": (0.5, 0.75, 1.0, 1.5, 2.0, "confidence"),
    "rank_constant": (3, 5, 10, 20, 30, 60),
    "candidates": (40, 80, 160),
    "decay": (
        ("tenant", None, None),  # the tenant's decay (180 days flat, scale 1825)
        ("long", 365.0, 3650.0),
        ("off", None, None),
    ),
    "window_decay": (True, False),
    "time_anchor": ("clock", "history"),
    # A turn's lexical context field (the previous turn's words) against its own text.
    "context_boost": (0.0, 0.1, 0.25, 0.5, 1.0),
    # The share of its fused score a turn at the head lends to its session neighbours, and how
    # far (memory.fusion.spread_to_neighbours).
    "session_spread": (0.0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.5),
    "session_depth": (1, 2, 3),
}
# Where each corpus is asked: at its own ``now``, and the conversations also three years later,
# as a server's clock reads a history imported with its real dates (the held-out benchmark's
# situation: decay and time words then meet old memories). Each is a column of the rule.
CONDITIONS: tuple[tuple[str, int], ...] = (
    ("personas", 0),
    ("conversations", 0),
    ("agent_work", 0),
    ("conversations", 1095),
)


@dataclass(frozen=True)
class Setting:
    """One point of the sweep: the values of every knob."""

    lexical_weight: Any = 0.5
    rank_constant: int = 5
    candidates: int = 80
    decay: tuple[str, float | None, float | None] = ("tenant", None, None)
    window_decay: bool = True
    time_anchor: TimeAnchor = "clock"
    context_boost: float = 0.5
    session_spread: float = 0.25
    session_depth: int = 2

    @classmethod
    def of(cls, plan: ResolvedPlan) -> Setting:
        """The sweep's starting point: a resolved plan's knobs (the tenant's decay)."""
        knobs = (f.name for f in dataclasses.fields(cls) if f.name != "decay")
        return cls(**{name: getattr(plan, name) for name in knobs})

    def plan(self) -> RecallPlan:
        name, offset, scale = self.decay
        return RecallPlan(
            lexical_weight=self.lexical_weight,
            rank_constant=self.rank_constant,
            candidates=self.candidates,
            decay=name != "off",
            decay_offset_days=offset,
            decay_scale_days=scale,
            window_decay=self.window_decay,
            time_anchor=self.time_anchor,
            context_boost=self.context_boost,
            session_spread=self.session_spread,
            session_depth=self.session_depth,
        )

    def label(self) -> str:
        return (
            f"w={self.lexical_weight} c={self.rank_constant} n={self.candidates} "
            f"decay={self.decay[0]} window_decay={self.window_decay} "
            f"time_anchor={self.time_anchor} context_boost={self.context_boost} "
            f"session_spread={self.session_spread} session_depth={self.session_depth}"
        )


def rule_key(result: dict[str, Any], *, is_current: bool) -> tuple[float, ...]:
    """What the rule maximises, in order: worst corpus R@10, mean R@10, mean R@5, current."""
    per = result["per_corpus"]
    r10 = [c["r@10"] for c in per.values()]
    r5 = [c["r@5"] for c in per.values()]
    return (
        round(min(r10), 3),
        round(sum(r10) / len(r10), 3),
        round(sum(r5) / len(r5), 3),
        1.0 if is_current else 0.0,
    )


class Sweeper:
    """Asks the chosen questions of a loaded run under a setting, with each question's query
    vector computed once."""

    def __init__(
        self,
        run: LoadedRun,
        personas: Sequence[Persona],
        *,
        split: str | None = "dev",
        limit: int | None = None,
        conditions: Sequence[tuple[str, int]] = CONDITIONS,
    ) -> None:
        from memory.public import embedder

        self.run = run
        self.personas = list(personas)
        self.asked: dict[str, list[Question]] = {
            p.persona: select_questions(p.questions, limit, split) for p in personas
        }
        model = embedder()
        self.vectors = {
            q.id: model.embed_query(q.question) for qs in self.asked.values() for q in qs
        }
        present = {p.corpus for p in personas}
        self.conditions = [(c, days) for c, days in conditions if c in present]
        self.cache: dict[Setting, dict[str, Any]] = {}

    def measure(self, setting: Setting) -> dict[str, Any]:
        if setting in self.cache:
            return self.cache[setting]
        plan = setting.plan()
        groups: dict[str, list[Rank]] = defaultdict(list)
        kinds: dict[str, list[Rank]] = defaultdict(list)
        for corpus, days in self.conditions:
            label = corpus if not days else f"{corpus}@+{days}d"
            for persona in (p for p in self.personas if p.corpus == corpus):
                self._ask(persona, plan, days, label, groups, kinds)
        measured = {
            "setting": setting.label(),
            "per_corpus": {c: scores(r).as_dict() for c, r in sorted(groups.items())},
            "per_corpus_kind": {c: scores(r).as_dict() for c, r in sorted(kinds.items())},
        }
        self.cache[setting] = measured
        return measured

    def _ask(
        self,
        persona: Persona,
        plan: RecallPlan,
        days: int,
        label: str,
        groups: dict[str, list[Rank]],
        kinds: dict[str, list[Rank]],
    ) -> None:
        from memory.public import memory_recall

        loaded = self.run.users[persona.persona]
        names = {**{v: k for k, v in self.run.catalog_ids.items()}, **loaded.id_to_key}
        for q in self.asked[persona.persona]:
            result = memory_recall(
                user=loaded.user,
                query=q.question,
                k=K,
                plan=plan,
                track_usage=False,
                now=persona.now + timedelta(days=days),
                vector=self.vectors[q.id],
            )
            keys = [names.get(h.doc.id) for h in result.hits]
            rank: Rank = (
                evidence_ranks(keys, q.targets)
                if q.match == "all"
                else first_hit_rank(keys, q.targets)
            )
            groups[label].append(rank)
            kinds[f"{label}/{q.kind}"].append(rank)


def coordinate_ascent(
    sweeper: Sweeper,
    start: Setting,
    *,
    rounds: int = 2,
    knobs: dict[str, tuple[Any, ...]] = KNOBS,
    log: Callable[[str], None] = lambda line: None,
) -> dict[str, Any]:
    """Apply the rule to each knob in turn (others held), ``rounds`` times."""
    current = start
    tables: list[dict[str, Any]] = []
    for n in range(1, rounds + 1):
        for knob, values in knobs.items():
            rows = []
            for value in values:
                candidate = dataclasses.replace(current, **{knob: value})
                result = sweeper.measure(candidate)
                key = rule_key(result, is_current=candidate == current)
                rows.append({"value": value, "key": key, **result})
                log(f"round {n} {knob}={value}: worst R@10 {key[0]:.3f} mean {key[1]:.3f}")
            best = max(rows, key=lambda r: r["key"])
            current = dataclasses.replace(current, **{knob: best["value"]})
            tables.append({"round": n, "knob": knob, "chosen": best["value"], "rows": rows})
    return {"chosen": current, "tables": tables, "final": sweeper.measure(current)}
