"""Ask every question as its persona at the corpus's fixed ``now``; score it per ablation; probe
for leaks across users and tenants."""

from __future__ import annotations

import hashlib
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from lab.evaluation.corpus import (
    KEY_PATTERN,
    KEY_TYPES,
    LoadedRun,
    LoadedUser,
    Persona,
    Question,
)
from lab.evaluation.metrics import KS, evidence_ranks, first_hit_rank, paired, scores
from memory.public import DEFAULT_PLAN, RecallPlan

K = 10


@dataclass(frozen=True)
class Ablation:
    """A named recall plan: the full pipeline, or the same with one part taken out."""

    name: str
    plan: RecallPlan = DEFAULT_PLAN


ABLATIONS = (
    Ablation("full"),
    Ablation("lexical_only", RecallPlan(legs=("lexical",))),
    Ablation("dense_only", RecallPlan(legs=("dense",))),
    Ablation("no_rerank", RecallPlan(rerank=False)),
    Ablation("no_decay", RecallPlan(decay=False)),
    Ablation("no_time_hints", RecallPlan(time_hints=False)),
    Ablation("equal_weights", RecallPlan(lexical_weight=1.0)),  # plain RRF, as in the source design
    # Each lexical leg weighed by its own confidence per query: the default before the RRF
    # rank constant went to 5 (lab/docs/recall-notebook.md, session 4).
    Ablation("confidence_weight", RecallPlan(lexical_weight="confidence")),
    Ablation("no_succession", RecallPlan(succession=False)),  # superseded hits not credited
    # The defaults before the rule across corpora (lab/docs/recall-notebook.md, issue 21).
    Ablation("lexical_weight_0_5", RecallPlan(lexical_weight=0.5)),
    Ablation("clock_anchor", RecallPlan(time_anchor="clock")),  # time words read off the clock
    # A turn's lexical context field (the previous turn's words) not searched, or weighed
    # otherwise than ATLAS_TURN_CONTEXT_BOOST (lab/docs/recall-notebook.md, "A lexical context").
    Ablation("no_turn_context", RecallPlan(context_boost=0.0)),
    Ablation("lexical_only_no_turn_context", RecallPlan(legs=("lexical",), context_boost=0.0)),
    Ablation("turn_context_0_1", RecallPlan(context_boost=0.1)),
    Ablation("turn_context_0_25", RecallPlan(context_boost=0.25)),
    Ablation("turn_context_0_5", RecallPlan(context_boost=0.5)),
    Ablation("turn_context_1_0", RecallPlan(context_boost=1.0)),
    # The session spread (a turn at the head lends to the turns around it) off, or weighed or
    # reaching otherwise than ATLAS_RECALL_SESSION_SPREAD / _DEPTH ("Session spread").
    Ablation("no_session_spread", RecallPlan(session_spread=0.0)),
    Ablation("session_spread_0_1", RecallPlan(session_spread=0.1)),
    Ablation("session_spread_0_5", RecallPlan(session_spread=0.5)),
    Ablation("session_depth_1", RecallPlan(session_depth=1)),
    Ablation("session_depth_3", RecallPlan(session_depth=3)),
    Ablation("lexical_only_no_session_spread", RecallPlan(legs=("lexical",), session_spread=0.0)),
    Ablation("dense_only_no_session_spread", RecallPlan(legs=("dense",), session_spread=0.0)),
    # The dense legs embed the question without its time phrase ("in March"): the window
    # carries the time (memory.query.without_time_phrase).
    Ablation("strip_time_phrase", RecallPlan(strip_time_phrase=True)),
    # Issue 33, items 3 and 4 (lab/docs/recall-notebook.md, "Issue 33: methods"): pseudo-
    # relevance feedback from the fused top n (lexical: m new words; dense: the hits' mean
    # vector at a share), weighed w in the fusion; at most c turns per session in the top k.
    Ablation("prf_lex_3x5", RecallPlan(feedback_docs=3, feedback_terms=5)),
    Ablation("prf_lex_3x10", RecallPlan(feedback_docs=3, feedback_terms=10)),
    Ablation("prf_lex_5x10", RecallPlan(feedback_docs=5, feedback_terms=10)),
    Ablation(
        "prf_lex_3x10_w1", RecallPlan(feedback_docs=3, feedback_terms=10, feedback_weight=1.0)
    ),
    Ablation("prf_dense_3x0_5", RecallPlan(feedback_docs=3, feedback_dense=0.5)),
    Ablation("prf_dense_3x1", RecallPlan(feedback_docs=3, feedback_dense=1.0)),
    Ablation(
        "prf_both_3",
        RecallPlan(feedback_docs=3, feedback_terms=10, feedback_dense=0.5),
    ),
    Ablation("session_cap_1", RecallPlan(session_cap=1)),
    Ablation("session_cap_2", RecallPlan(session_cap=2)),
    Ablation("session_cap_3", RecallPlan(session_cap=3)),
    # The turn prior (a head turn that is a question or small talk scores
    # ATLAS_RECALL_TURN_PRIOR times its score, both: twice) off (lab/docs/recall-notebook.md,
    # "Issue 33: a turn prior").
    Ablation("no_turn_prior", RecallPlan(turn_prior=1.0)),
)


def select_questions(
    questions: Sequence[Question], limit: int | None, split: str | None = None
) -> list[Question]:
    """All questions (of ``split``, when given), or ``limit`` of them: a fixed, kind-balanced
    subset (round robin over the kinds, each kind in a hash order of its ids) so CI runs see
    every kind."""
    if split is not None:
        questions = [q for q in questions if q.split == split]
    if limit is None or limit >= len(questions):
        return list(questions)
    by_kind: dict[str, list[Question]] = defaultdict(list)
    for q in sorted(questions, key=lambda q: hashlib.sha1(q.id.encode()).hexdigest()):  # noqa: S324
        by_kind[q.kind].append(q)
    chosen: list[Question] = []
    queues = [by_kind[k] for k in sorted(by_kind)]
    while len(chosen) < limit:
        for queue in queues:
            if queue and len(chosen) < limit:
                chosen.append(queue.pop(0))
    order = {q.id: n for n, q in enumerate(questions)}
    return sorted(chosen, key=lambda q: order[q.id])


def target_type(question: Question) -> str:
    match = KEY_PATTERN.match(question.targets[0])
    return KEY_TYPES[match.group(2)] if match else "unknown"


def leaks_in(hits: Sequence[Any], asker: Any) -> list[str]:
    """Ids of returned documents that are neither the asker's nor their tenant's catalog."""
    tenant_id, user_id = asker.memory_tenant_id, asker.memory_id
    return [
        h.doc.id
        for h in hits
        if h.doc.tenant_id != tenant_id or (h.doc.user_id is not None and h.doc.user_id != user_id)
    ]


def _recall(
    user: Any,
    question: str,
    persona: Persona,
    ablation: Ablation,
    offset: timedelta = timedelta(0),
) -> Any:
    from memory.public import memory_recall

    return memory_recall(
        user=user,
        query=question,
        k=K,
        plan=ablation.plan,
        track_usage=False,
        now=persona.now + offset,
    )


def evaluate(
    run: LoadedRun,
    personas: Sequence[Persona],
    *,
    limit_questions: int | None = None,
    ablations: Sequence[Ablation] = ABLATIONS,
    reranker_configured: bool = False,
    split: str | None = None,
    clock_offset_days: int = 0,
) -> dict[str, Any]:
    """Every figure of the run as a JSON-able dict (see ``docs/recall-quality.md``).
    ``clock_offset_days``: ask that many days after each corpus's ``now``."""
    offset = timedelta(days=clock_offset_days)
    catalog_keys = {v: k for k, v in run.catalog_ids.items()}
    rows: list[dict[str, Any]] = []
    by_id: dict[str, dict[str, Any]] = {}
    leaks: list[dict[str, Any]] = []
    timings: dict[str, Any] = {}
    asked = {p.persona: select_questions(p.questions, limit_questions, split) for p in personas}
    for ablation in ablations:
        if ablation.name == "no_rerank" and not reranker_configured:
            continue  # identical to full: filled in from it below
        started, count = time.perf_counter(), 0
        for persona in personas:
            loaded = run.users[persona.persona]
            names = {**catalog_keys, **loaded.id_to_key}
            for q in asked[persona.persona]:
                result = _recall(loaded.user, q.question, persona, ablation, offset)
                count += 1
                keys = [names.get(h.doc.id) for h in result.hits]
                row = by_id.get(q.id)
                if row is None:
                    row = by_id[q.id] = {
                        "id": q.id,
                        "corpus": persona.corpus,
                        "split": q.split,
                        "match": q.match,
                        "persona": persona.persona,
                        "kind": q.kind,
                        "type": target_type(q),
                        "question": q.question,
                        "targets": q.targets,
                        "top3": keys[:3],
                        "time_window": _window(result.time_window),
                        "ranks": {},
                    }
                    rows.append(row)
                row["ranks"][ablation.name] = (
                    evidence_ranks(keys, q.targets)
                    if q.match == "all"
                    else first_hit_rank(keys, q.targets)
                )
                for leaked in leaks_in(result.hits, loaded.user):
                    leaks.append(
                        {"probe": "own", "question": q.id, "asker": persona.persona, "doc": leaked}
                    )
        timings[ablation.name] = {
            "recalls": count,
            "mean_ms": round((time.perf_counter() - started) * 1000 / max(count, 1), 1),
        }
    if not reranker_configured and any(a.name == "no_rerank" for a in ablations):
        for row in rows:
            row["ranks"]["no_rerank"] = row["ranks"]["full"]
    probes = _probe_leaks(run, personas, asked)
    leaks.extend(probes["leaks"])
    return {
        "k": K,
        "ablations": {a.name: _group(rows, a.name) for a in ablations},
        "versus_full": _versus_full(rows, [a.name for a in ablations]),
        "questions": rows,
        "leakage": {"probes": probes["count"], "leaks": len(leaks), "details": leaks[:50]},
        "timings": timings,
        "notes": []
        if reranker_configured
        else ["no reranker configured (ATLAS_RERANKER=none): no_rerank equals full"],
    }


def _window(window: Any) -> list[str] | None:
    return [window.start.isoformat(), window.end.isoformat()] if window else None


def _group(rows: Sequence[dict[str, Any]], ablation: str) -> dict[str, Any]:
    def of(select: Any) -> dict[str, Any]:
        groups: dict[str, list[int | None]] = defaultdict(list)
        for row in rows:
            groups[select(row)].append(row["ranks"][ablation])
        return {name: scores(ranks).as_dict() for name, ranks in sorted(groups.items())}

    return {
        "overall": scores([r["ranks"][ablation] for r in rows]).as_dict(),
        "per_corpus": of(lambda r: r["corpus"]),
        "per_corpus_kind": of(lambda r: f"{r['corpus']}/{r['kind']}"),
        "per_persona": of(lambda r: r["persona"]),
        "per_type": of(lambda r: r["type"]),
        "per_kind": of(lambda r: r["kind"]),
    }


def _versus_full(rows: Sequence[dict[str, Any]], names: Sequence[str]) -> dict[str, Any]:
    """Each ablation against the full pipeline, question by question, at each cut-off: how
    many questions only one of the two finds, and whether that split could be chance."""
    if "full" not in names:
        return {}
    full = [r["ranks"]["full"] for r in rows]
    return {
        name: [paired(full, [r["ranks"][name] for r in rows], k).as_dict() for k in KS]
        for name in names
        if name != "full"
    }


def _probe_leaks(
    run: LoadedRun, personas: Sequence[Persona], asked: dict[str, list[Question]]
) -> dict[str, Any]:
    """Each persona's questions asked as every other persona of the tenant and as the foreign
    tenant's user: any returned document not theirs (by tenant/user id, and by id: one of the
    persona's own memories) is a leak."""
    full = ABLATIONS[0]
    count, leaks = 0, list[dict[str, Any]]()
    for persona in personas:
        owner = run.users[persona.persona]
        owned = set(owner.key_to_id.values())
        askers: list[LoadedUser] = [u for name, u in run.users.items() if name != persona.persona]
        askers.append(run.foreign)
        for asker in askers:
            for q in asked[persona.persona]:
                result = _recall(asker.user, q.question, persona, full)
                count += 1
                bad = set(leaks_in(result.hits, asker.user))
                bad |= {h.doc.id for h in result.hits if h.doc.id in owned}
                label = "foreign" if asker is run.foreign else asker.persona
                leaks.extend(
                    {"probe": "cross", "question": q.id, "asker": label, "doc": d}
                    for d in sorted(bad)
                )
    return {"count": count, "leaks": leaks}
