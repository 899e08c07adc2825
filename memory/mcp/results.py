"""What the MCP tools answer: memories as JSON, successes and domain errors as tool results."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from mcp.types import CallToolResult, TextContent

from atlas_platform.api import INTERNAL_ERROR, INTERNAL_MESSAGE
from atlas_platform.context import current_request_id
from atlas_platform.exceptions import AtlasError
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


def _json(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def success(data: dict[str, Any]) -> CallToolResult:
    """The JSON once, as text: every client shows text to the model, and the tools declare no
    output schema, so a structured copy would only send the payload twice."""
    return CallToolResult(content=[TextContent(type="text", text=_json(data))])


def failure(exc: AtlasError) -> CallToolResult:
    """A domain error as a tool error the model can read and act on (a dependency failure
    shows only its class's fixed text: ``AtlasError.public``)."""
    message, _details = exc.public
    return _tool_error(exc.code, message)


def internal_failure() -> CallToolResult:
    """An unexpected error as a tool error: a fixed sentence, never the exception's text."""
    return _tool_error(INTERNAL_ERROR, INTERNAL_MESSAGE)


def invalid_arguments(errors: Sequence[Mapping[str, Any]]) -> CallToolResult:
    """Arguments that break the tool's schema, in the shape of a domain error: each field and
    what is wrong with it (never the rejected value: it is the caller's data)."""
    problems = sorted(
        {f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in errors}
    )
    return _tool_error("invalid_arguments", "Invalid arguments: " + "; ".join(problems) + ".")


def unknown_tool(name: str) -> CallToolResult:
    return _tool_error("unknown_tool", f"No tool {name!r}: list the tools for their names.")


def _tool_error(code: str, message: str) -> CallToolResult:
    error = {"code": code, "message": message, "request_id": current_request_id() or None}
    return CallToolResult(
        content=[TextContent(type="text", text=_json({"error": error}))], is_error=True
    )
