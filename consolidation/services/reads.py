"""What a run reads: the episode window after the watermark, a few earlier episodes, the
playbooks shown to the sessions, and the user's current facts and playbooks (found with the
engine's own hybrid recall, not a full dump)."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from consolidation.models import ConsolidationState, PlaybookSuggestion
from memory.public import (
    MemoryDoc,
    RecallPlan,
    memory_episodes_after,
    memory_get_many,
    memory_recall,
)
from tenants.models import User

NEIGHBOURS_PER_EPISODE = 5
MAX_KNOWN = 40

# The platform's own reads rank by the fused order; a reranker would only cost time here.
NO_RERANK = RecallPlan(rerank=False)


@dataclass
class Inputs:
    window: list[MemoryDoc]
    context: list[MemoryDoc]
    facts: list[MemoryDoc]
    playbooks: list[MemoryDoc]
    suggested: dict[str, list[str]]  # episode id -> playbook ids its turn's recall returned

    @property
    def window_ids(self) -> set[str]:
        return {d.id for d in self.window}


def watermark_key(state: ConsolidationState) -> tuple[str, str] | None:
    if state.watermark_created_at is None:
        return None
    return (state.watermark_created_at.isoformat(), state.watermark_episode_id)


def read_inputs(user: User, state: ConsolidationState) -> Inputs:
    window = memory_episodes_after(
        user=user, after=watermark_key(state), limit=settings.ATLAS_CONSOLIDATION_WINDOW
    )
    context = memory_get_many(user=user, memory_ids=state.context_episode_ids) if window else []
    if not window:
        return Inputs(window=[], context=[], facts=[], playbooks=[], suggested={})
    suggested = _suggested(user, [d.id for d in [*context, *window]])
    facts, playbooks = _known(user, window, suggested)
    return Inputs(window, context, facts, playbooks, suggested)


def _suggested(user: User, episode_ids: list[str]) -> dict[str, list[str]]:
    rows = PlaybookSuggestion.objects.filter(user=user, episode_id__in=episode_ids)
    return {row.episode_id: list(row.procedure_ids) for row in rows}


def _known(
    user: User, window: list[MemoryDoc], suggested: dict[str, list[str]]
) -> tuple[list[MemoryDoc], list[MemoryDoc]]:
    """Current facts and playbooks near any episode of the window, plus the suggested ones."""
    found: dict[str, MemoryDoc] = {}
    for episode in window:
        result = memory_recall(
            user=user,
            query=episode.text,
            k=NEIGHBOURS_PER_EPISODE,
            memory_types=["semantic", "procedural"],
            include_catalog=False,
            plan=NO_RERANK,
            track_usage=False,
        )
        for hit in result.hits:
            found.setdefault(hit.doc.id, hit.doc)
    found = dict(list(found.items())[:MAX_KNOWN])
    shown = [pid for ids in suggested.values() for pid in ids if pid not in found]
    if shown:
        for doc in memory_get_many(user=user, memory_ids=list(dict.fromkeys(shown))):
            if doc.memory_type == "procedural" and doc.user_id == user.memory_id:
                found[doc.id] = doc
    known = list(found.values())
    facts = [d for d in known if d.memory_type == "semantic" and not d.superseded_by]
    playbooks = [d for d in known if d.memory_type == "procedural"]
    return facts, playbooks
