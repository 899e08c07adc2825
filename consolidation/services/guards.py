"""What of the model's answer may be written: supported by the window, above the confidence
floor, not a near duplicate of an existing memory (hybrid search, then cosine similarity of
the embeddings >= ATLAS_CONSOLIDATION_DUPLICATE_SIMILARITY), superseding only facts the run
saw, updating only playbooks the run saw."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from django.conf import settings

from consolidation.prompt import Answer, FactCandidate, ProcedureCandidate, ProcedureUpdate
from consolidation.services.reads import Inputs
from memory.public import RecallPlan, embedder, memory_recall, store_errors
from tenants.models import User

DUPLICATE_NEIGHBOURS = 5

# The platform's own reads rank by the fused order; a reranker would only cost time here.
NO_RERANK = RecallPlan(rerank=False)


@dataclass
class Plan:
    facts: list[FactCandidate] = field(default_factory=list)
    procedures: list[ProcedureCandidate] = field(default_factory=list)
    updates: list[ProcedureUpdate] = field(default_factory=list)
    duplicates: int = 0
    unsupported: int = 0
    low_confidence: int = 0


def procedure_text(candidate: ProcedureCandidate) -> str:
    steps = " ".join(f"{n}. {step}" for n, step in enumerate(candidate.steps, start=1))
    return f"{candidate.name}. When: {candidate.trigger}. Steps: {steps}"


def screen(answer: Answer, inputs: Inputs, *, user: User) -> Plan:
    plan = Plan()
    window = inputs.window_ids
    floor = user.tenant.consolidation_confidence_floor
    seen_facts = {d.id for d in inputs.facts}
    kept_facts: list[np.ndarray] = []
    kept_procedures: list[np.ndarray] = []
    for fact in answer.facts:
        if (
            not _supported(fact.supporting_episode_ids, window)
            or not set(fact.supersedes) <= seen_facts
        ):
            plan.unsupported += 1
        elif fact.confidence < floor:
            plan.low_confidence += 1
        elif _duplicate(user, fact.text, "semantic", set(fact.supersedes), kept_facts):
            plan.duplicates += 1
        else:
            plan.facts.append(fact)
    procedure_floor = max(floor, settings.ATLAS_CONSOLIDATION_PROCEDURE_FLOOR)
    for procedure in answer.procedures:
        if not _supported(procedure.supporting_episode_ids, window):
            plan.unsupported += 1
        elif procedure.confidence < procedure_floor:
            plan.low_confidence += 1
        elif _duplicate(user, procedure_text(procedure), "procedural", set(), kept_procedures):
            plan.duplicates += 1
        else:
            plan.procedures.append(procedure)
    seen_playbooks = {d.id for d in inputs.playbooks}
    updated: set[str] = set()
    for update in answer.updates:
        cited_ok = not update.supporting_episode_ids or _supported(
            update.supporting_episode_ids, window
        )
        if (
            update.procedure_id not in seen_playbooks
            or update.procedure_id in updated
            or not (cited_ok)
        ):
            plan.unsupported += 1
        else:
            updated.add(update.procedure_id)
            plan.updates.append(update)
    return plan


def _supported(ids: list[str], window: set[str]) -> bool:
    """Cites at least one episode, and only episodes of this run's window."""
    return bool(ids) and set(ids) <= window


def _duplicate(
    user: User, text: str, memory_type: str, ignore: set[str], accepted: list[np.ndarray]
) -> bool:
    """The nearest existing memories (hybrid recall), or a candidate this run already kept,
    at cosine similarity >= the threshold. Facts being superseded do not count."""
    threshold = settings.ATLAS_CONSOLIDATION_DUPLICATE_SIMILARITY
    result = memory_recall(
        user=user,
        query=text,
        k=DUPLICATE_NEIGHBOURS,
        memory_types=[memory_type],
        include_catalog=False,
        plan=NO_RERANK,
        track_usage=False,
    )
    neighbours = [h.doc.text for h in result.hits if h.doc.id not in ignore]
    with store_errors():
        vectors = _unit(embedder().embed([text, *neighbours]))
    candidate, others = vectors[0], [*vectors[1:], *accepted]
    if any(float(candidate @ other) >= threshold for other in others):
        return True
    accepted.append(candidate)
    return False


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.asarray(vectors / np.where(norms == 0, 1.0, norms))
