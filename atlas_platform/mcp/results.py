"""What an MCP tool answers: a success's JSON and domain errors as tool results, in the shared
error shape ``{"error": {code, message, request_id}}`` (the REST API's)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from mcp.types import CallToolResult, TextContent

from atlas_platform.api import INTERNAL_ERROR, INTERNAL_MESSAGE
from atlas_platform.context import current_request_id
from atlas_platform.exceptions import AtlasError


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
