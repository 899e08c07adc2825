"""What the MCP tools answer: memories as JSON, successes and domain errors as tool results."""

from __future__ import annotations

import json
from typing import Any

from mcp.types import CallToolResult, TextContent

from atlas_platform.api import INTERNAL_ERROR, INTERNAL_MESSAGE
from atlas_platform.context import current_request_id
from atlas_platform.exceptions import AtlasError
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


def chain_out(chain: list[MemoryDoc]) -> dict[str, Any]:
    return {"chain": [memory_out(doc) for doc in chain]}


def success(data: dict[str, Any]) -> CallToolResult:
    """The same JSON as text (for any client) and as structured content."""
    text = json.dumps(data, ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def failure(exc: AtlasError) -> CallToolResult:
    """A domain error as a tool error the model can read and act on (a dependency failure
    shows only its class's fixed text: ``AtlasError.public``)."""
    message, _details = exc.public
    return _tool_error(exc.code, message)


def internal_failure() -> CallToolResult:
    """An unexpected error as a tool error: a fixed sentence, never the exception's text."""
    return _tool_error(INTERNAL_ERROR, INTERNAL_MESSAGE)


def _tool_error(code: str, message: str) -> CallToolResult:
    error = {"code": code, "message": message, "request_id": current_request_id() or None}
    return CallToolResult(
        content=[TextContent(type="text", text=f"{message} ({code})")],
        structured_content={"error": error},
        is_error=True,
    )
