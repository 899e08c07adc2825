"""MCP: any arguments to any tool (and to an unknown one), on either MCP path, through a live
server: the HTTP status is below 500, the answer is JSON-RPC, and no tool fails with an
internal error (a tool's refusals are tool errors with a code and a message)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st

from atlas_server.asgi import application
from tenants.models import Tenant, User
from tests.atlas_platform.mcp.conftest import issue
from tests.fuzz.conftest import FUZZ, JSON, TEXT

pytestmark = pytest.mark.django_db(transaction=True)
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
TOOLS = sorted(t.name for t in application.endpoint.server._tool_manager.list_tools())
ARGUMENT_NAMES = sorted(
    {
        name
        for tool in application.endpoint.server._tool_manager.list_tools()
        for name in tool.parameters.get("properties", {})
    }
)


@pytest.fixture
def mcp(atlas_server: str, acme: Tenant, alice: User, settings: Any) -> Iterator[dict[str, Any]]:
    for scope in ("RECALL", "WRITE", "READ", "OPERATIONS"):
        setattr(settings, f"ATLAS_RATE_{scope}", "100000/min")
    with httpx2.Client(timeout=30) as http:
        yield {"url": atlas_server, "user": issue(acme, alice), "tenant": issue(acme), "http": http}


def call(mcp: dict[str, Any], path: str, token: str, body: Any) -> httpx2.Response:
    headers = {**HEADERS, "Authorization": f"Bearer {token}"}
    http: httpx2.Client = mcp["http"]
    return http.post(f"{mcp['url']}{path}", content=json.dumps(body), headers=headers)


def check(response: httpx2.Response) -> None:
    assert response.status_code < 500, (response.status_code, response.text[:300])
    answer = response.json()
    assert answer.get("jsonrpc") == "2.0", answer
    if "error" in answer:
        assert answer["error"]["message"], answer
        return
    result = answer["result"]
    if result.get("isError"):
        error = json.loads(result["content"][0]["text"])["error"]
        assert error["code"] and error["message"], error
        assert error["code"] != "internal_error", error


def test_the_tools_are_found() -> None:
    assert {"recall_memory", "write_memory", "record_turn"} <= set(TOOLS)


@FUZZ
@given(
    tool=st.sampled_from([*TOOLS, "no_such_tool"]),
    arguments=st.one_of(st.dictionaries(st.sampled_from(ARGUMENT_NAMES), JSON, max_size=5), JSON),
)
def test_any_arguments_to_any_tool_are_answered_without_a_5xx(
    mcp: dict[str, Any], tool: str, arguments: Any
) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    check(call(mcp, "/mcp/", mcp["user"], body))


@FUZZ
@given(
    user_id=TEXT,
    message=st.one_of(
        JSON,
        st.fixed_dictionaries(
            {
                "jsonrpc": st.just("2.0"),
                "id": st.one_of(st.integers(), TEXT, st.none()),
                "method": st.one_of(
                    st.sampled_from(
                        ["tools/call", "tools/list", "initialize", "ping", "resources/list"]
                    ),
                    TEXT,
                ),
                "params": JSON,
            }
        ),
    ),
)
def test_any_message_on_a_named_user_path_is_answered_without_a_5xx(
    mcp: dict[str, Any], user_id: str, message: Any
) -> None:
    path = f"/api/atlas/mcp/{quote(user_id, safe='') or 'x'}"
    response = call(mcp, path, mcp["tenant"], message)
    assert response.status_code < 500, (response.status_code, response.text[:300])
    if response.status_code >= 400 and response.content:
        answer = response.json()
        assert "error" in answer, answer
