"""What the MCP endpoint answers when it refuses or fails a request outside a tool call.

Always JSON, with the HTTP status that says what happened (401 with the Bearer challenge, 403,
404, 500, 503). A JSON-RPC request (a body with ``"jsonrpc": "2.0"``, what MCP clients send) gets
a JSON-RPC error object for its id, the shared error in ``data``::

    {"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "...",
                                          "data": {"code": "unauthenticated", "message": "...",
                                                   "request_id": "..."}}}

anything else the shared shape ``{"error": {"code", "message", "request_id"}}``. A tool's own
failures are tool results (``results.failure``), not these.
"""

from __future__ import annotations

import json
from typing import Any

from atlas_platform.api import INTERNAL_ERROR, INTERNAL_MESSAGE, atlas_error_body, error_body
from atlas_platform.exceptions import AtlasError

JSONRPC_REFUSED = -32001  # JSON-RPC's range for implementation-defined server errors
JSONRPC_INTERNAL = -32603  # JSON-RPC's "Internal error"
_NOT_JSONRPC = object()


def jsonrpc_id(body: bytes) -> Any:
    """The id of the JSON-RPC request in ``body`` (None for a notification), or ``_NOT_JSONRPC``."""
    try:
        message = json.loads(body)
    except RecursionError:  # too deep to read its id: a JSON-RPC error with a null id
        return None
    except ValueError:
        return _NOT_JSONRPC
    if isinstance(message, dict) and message.get("jsonrpc") == "2.0":
        rpc_id = message.get("id")
        return rpc_id if isinstance(rpc_id, str | int) else None
    return _NOT_JSONRPC


def _answer(shared: dict[str, Any], status: int, body: bytes) -> dict[str, Any]:
    rpc_id = jsonrpc_id(body)
    if rpc_id is _NOT_JSONRPC:
        return shared
    error = shared["error"]
    code = JSONRPC_INTERNAL if status >= 500 else JSONRPC_REFUSED
    rpc_error = {"code": code, "message": error["message"], "data": error}
    return {"jsonrpc": "2.0", "id": rpc_id, "error": rpc_error}


def refusal_json(exc: AtlasError, body: bytes) -> dict[str, Any]:
    """A domain error (with only what it may show) for the request whose body was ``body``."""
    return _answer(atlas_error_body(exc), exc.status_code, body)


def internal_error_json(body: bytes) -> dict[str, Any]:
    """An unexpected failure: a fixed sentence and the request id, never the exception's text."""
    return _answer(error_body(INTERNAL_ERROR, INTERNAL_MESSAGE), 500, body)
