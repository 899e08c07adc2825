"""What memory's MCP tools answer: memories as JSON (``atlas_platform.mcp.results`` makes the
tool results)."""

from __future__ import annotations

from typing import Any

from memory.selectors import Profile
from memory.services.recall import RecallResult
from memory.services.writes import TurnResult
from memory.shapes import memory_json, recall_hit_json
from memory.types import MemoryDoc


def memory_out(doc: MemoryDoc) -> dict[str, Any]:
    """One memory in the shape every interface uses, compact: no empty or meaningless fields."""
    return memory_json(doc, compact=True)


def recall_out(result: RecallResult) -> dict[str, Any]:
    """Ranked memories, best first, and how the ranking was made."""
    return {
        "memories": [recall_hit_json(hit, compact=True) for hit in result.hits],
        "reranked": result.reranked,
        "reranker": result.reranker,
        "legs": result.legs,
        "took_ms": result.took_ms,
    }


def written_out(doc: MemoryDoc) -> dict[str, Any]:
    return {"memory": memory_out(doc)}


def turn_out(result: TurnResult) -> dict[str, Any]:
    return {"episode": memory_out(result.episode), "recalled": recall_out(result.recall)}


def reply_out(doc: MemoryDoc) -> dict[str, Any]:
    return {"episode": memory_out(doc)}


def profile_out(profile: Profile) -> dict[str, Any]:
    return {
        "facts": [memory_out(doc) for doc in profile.facts],
        "playbooks": [memory_out(doc) for doc in profile.playbooks],
        "counts": profile.counts,
    }


def chain_out(chain: list[MemoryDoc]) -> dict[str, Any]:
    return {"chain": [memory_out(doc) for doc in chain]}
