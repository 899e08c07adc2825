"""Hostile MCP requests answer a JSON-RPC error (4xx), never a 5xx, and run no tool."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from mcp.shared.exceptions import MCPError

from tenants.models import AuditEvent, Tenant, User
from tests.atlas_platform.mcp.conftest import issue, mcp_session, run

pytestmark = pytest.mark.django_db(transaction=True)
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def test_a_5000_level_nested_request_is_a_json_rpc_400(
    atlas_server: str, acme: Tenant, alice: User
) -> None:
    depth = 5000
    arguments = '{"text": "x", "metadata": {"a": ' + "[" * depth + "]" * depth + "}}"
    body = (
        '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": '
        '{"name": "memory_remember", "arguments": ' + arguments + "}}"
    )
    headers = {**HEADERS, "Authorization": f"Bearer {issue(acme, alice)}"}

    response = httpx2.post(f"{atlas_server}/mcp/", content=body, headers=headers, timeout=30)

    assert response.status_code == 400, response.text
    answer = response.json()
    # Too deep to read its id: a null id, which the SDK matches to the request it sent.
    assert answer["id"] is None and answer["error"]["data"]["code"] == "too_deep", answer
    assert AuditEvent.objects.filter(action__startswith="memory.").count() == 0


def test_a_slightly_too_deep_request_keeps_its_id(
    atlas_server: str, acme: Tenant, alice: User
) -> None:
    arguments = '{"text": "x", "metadata": {"a": ' + "[" * 100 + "]" * 100 + "}}"
    body = (
        '{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": '
        '{"name": "write_memory", "arguments": ' + arguments + "}}"
    )
    headers = {**HEADERS, "Authorization": f"Bearer {issue(acme, alice)}"}

    response = httpx2.post(f"{atlas_server}/mcp/", content=body, headers=headers, timeout=30)

    assert response.status_code == 400, response.text
    answer = response.json()
    assert answer["id"] == 8 and answer["error"]["data"]["code"] == "too_deep", answer


def test_mcp_tool_calls_share_the_tokens_rest_rate_limit(
    atlas_server: str, acme: Tenant, alice: User, settings: Any
) -> None:
    """One policy: REST recalls and MCP recalls of one token draw on one bucket; past it, the
    SDK shows a JSON-RPC error (HTTP 429 with Retry-After) and no tool runs."""
    settings.ATLAS_RATE_RECALL = "2/min"
    token = issue(acme, alice)
    auth = {"Authorization": f"Bearer {token}"}
    rest = httpx2.post(
        f"{atlas_server}/api/v1/users/alice/recall", json={"query": "x"}, headers=auth, timeout=30
    )
    assert rest.status_code == 200, rest.text

    async def scenario() -> tuple[Any, Any, Any]:
        async with mcp_session(f"{atlas_server}/mcp/", token) as session:
            first = await session.call_tool("recall_memory", {"query": "x"})
            refused: Any = None
            try:
                await session.call_tool("recall_memory", {"query": "x"})
            except MCPError as exc:
                refused = exc.error
            about = await session.call_tool("about_me", {})  # read: its own bucket
            return first, refused, about

    first, refused, about = run(scenario)

    assert not first.is_error
    assert refused is not None and refused.data["code"] == "throttled", refused
    assert not about.is_error
    raw = httpx2.post(
        f"{atlas_server}/mcp/",
        content='{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": '
        '{"name": "recall_memory", "arguments": {"query": "x"}}}',
        headers={**HEADERS, **auth},
        timeout=30,
    )
    assert raw.status_code == 429 and 0 < int(raw.headers["Retry-After"]) <= 60
    assert raw.json()["id"] == 3
    again = httpx2.post(
        f"{atlas_server}/api/v1/users/alice/recall", json={"query": "x"}, headers=auth, timeout=30
    )
    assert again.status_code == 429


def test_a_chunked_body_is_counted_too(
    atlas_server: str, acme: Tenant, alice: User, settings: Any
) -> None:
    """A body without Content-Length (chunked) is read ahead all the same: no way around the
    rate limit."""
    settings.ATLAS_RATE_RECALL = "1/min"
    headers = {**HEADERS, "Authorization": f"Bearer {issue(acme, alice)}"}
    body = (
        b'{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": '
        b'{"name": "recall_memory", "arguments": {"query": "x"}}}'
    )

    def chunks() -> Any:
        yield body[:20]
        yield body[20:]

    first = httpx2.post(f"{atlas_server}/mcp/", content=chunks(), headers=headers, timeout=30)
    second = httpx2.post(f"{atlas_server}/mcp/", content=chunks(), headers=headers, timeout=30)

    assert first.status_code == 200 and "result" in first.json(), first.text
    assert second.status_code == 429 and second.json()["id"] == 4
