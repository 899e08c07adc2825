"""The agents MCP tools through the SDK's server (schemas from the signatures, argument
validation, annotations), called as an authenticated request would call them."""

from __future__ import annotations

import asyncio
import inspect
import json
from types import SimpleNamespace
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer

from agents import mcp as agent_tools
from agents.models import Message, Task
from agents.services.agents import agent_token_issue
from agents.services.messages import message_send
from agents.services.sessions import session_start
from agents.services.tasks import task_create
from atlas_platform.mcp.auth import IDENTITY_SCOPE_KEY, McpIdentity
from tenants.services.tokens import token_issue
from tests.agents.conftest import register

pytestmark = pytest.mark.django_db(transaction=True)


def server() -> MCPServer:
    built: MCPServer = MCPServer("atlas-agents-test")
    for fn in agent_tools.TOOLS:
        built.add_tool(
            fn,
            description=inspect.cleandoc(fn.__doc__ or ""),
            annotations=agent_tools.HINTS[fn.__name__],
            structured_output=False,
        )
    return built


def as_token(token: Any) -> SimpleNamespace:
    """The context of a request the MCP app authenticated with ``token``."""
    identity = McpIdentity(token=token, user=token.user, request_id="test")
    scope = {IDENTITY_SCOPE_KEY: identity}
    return SimpleNamespace(request_context=SimpleNamespace(request=SimpleNamespace(scope=scope)))


def tool(ctx: SimpleNamespace, name: str, **arguments: Any) -> dict[str, Any]:
    result: Any = asyncio.run(server().call_tool(name, arguments, context=ctx))  # type: ignore[arg-type]
    if result.is_error:
        return {"error": json.loads(result.content[0].text)["error"]}
    return dict(json.loads(result.content[0].text))


def bound(agent: Any) -> SimpleNamespace:
    return as_token(agent_token_issue(agent=agent, name="bot").token)


def test_the_tools_are_listed_with_descriptions_and_hints():
    listed = asyncio.run(server().list_tools())

    assert {t.name for t in listed} == set(agent_tools.HINTS)
    for t in listed:
        assert t.description and len(t.description) > 60, t.name
        for name, prop in t.input_schema.get("properties", {}).items():
            assert prop.get("description"), f"{t.name}.{name} has no description"
    by_name: dict[str, Any] = {t.name: t for t in listed}
    assert by_name["read_inbox"].annotations.read_only_hint is True
    assert by_name["ack_message"].annotations.idempotent_hint is True
    assert "expected_version" in by_name["update_task"].input_schema["required"]


def test_a_session_of_tool_calls(alice, bob):
    alice_ctx = bound(register(alice))
    bob_ctx = bound(register(bob))

    task = tool(alice_ctx, "create_task", title="Bump the SDK", tags=["deps"])["task"]
    started = tool(
        alice_ctx, "update_task", task_id=task["id"], to_state="in_progress", expected_version=1
    )["task"]
    stale = tool(
        alice_ctx, "update_task", task_id=task["id"], to_state="completed", expected_version=1
    )
    mine = tool(alice_ctx, "list_tasks")["tasks"]
    sent = tool(alice_ctx, "send_message", to_agent="claude-code", to_user="bob", body="Bumped.")
    unread = tool(bob_ctx, "read_inbox")["messages"]
    acked = tool(bob_ctx, "ack_message", message_id=unread[0]["id"])["message"]

    assert (started["state"], started["version"]) == ("in_progress", 2)
    assert stale["error"]["code"] == "stale_version"
    assert [t["id"] for t in mine] == [task["id"]]
    assert [m["id"] for m in unread] == [sent["message"]["id"]]
    assert acked["acknowledged_at"] and tool(bob_ctx, "read_inbox")["messages"] == []


def test_session_history_lists_the_users_sessions(alice):
    agent = register(alice)
    session_start(agent=agent, session_id="s-1")
    user_ctx = as_token(token_issue(tenant=alice.tenant, user=alice, name="plain").token)

    history = tool(user_ctx, "session_history")["sessions"]

    assert [s["session_id"] for s in history] == ["s-1"]


def test_arguments_out_of_range_are_refused_by_the_schema(alice):
    from mcp.server.mcpserver.exceptions import ToolError

    ctx = bound(register(alice))

    with pytest.raises(ToolError):
        asyncio.run(server().call_tool("list_tasks", {"limit": 0}, context=ctx))  # type: ignore[arg-type]
    with pytest.raises(ToolError):
        asyncio.run(
            server().call_tool("create_task", {"title": "x", "project_key": "abc"}, context=ctx)  # type: ignore[arg-type]
        )
    assert Task.objects.count() == 0


def test_no_tool_reaches_another_users_or_tenants_rows(alice, bob, charlie):
    alice_agent = register(alice)
    bobs = register(bob)
    register(charlie)
    bobs_task = task_create(user=bob, agent=bobs, title="Bob's")
    to_bob = message_send(sender=alice_agent, to_user="bob", to_agent="claude-code", body="hi")
    alice_ctx, charlie_ctx = bound(alice_agent), bound(charlie.agents.get())
    plain = as_token(token_issue(tenant=alice.tenant, user=alice, name="plain").token)
    session_start(agent=bobs, session_id="bob-s")

    moved = tool(
        alice_ctx, "update_task", task_id=bobs_task.pk, to_state="cancelled", expected_version=1
    )
    acked = tool(alice_ctx, "ack_message", message_id=to_bob.pk)
    across = tool(charlie_ctx, "send_message", to_agent="claude-code", to_user="alice", body="x")
    unbound = tool(plain, "create_task", title="x")

    assert moved["error"]["code"] == "task_not_found"
    assert acked["error"]["code"] == "message_not_found"
    assert across["error"]["code"] == "agent_not_found"
    assert unbound["error"]["code"] == "token_not_bound_to_agent"
    assert tool(charlie_ctx, "list_tasks", mine_open=False)["tasks"] == []
    assert tool(charlie_ctx, "session_history")["sessions"] == []
    assert tool(alice_ctx, "session_history")["sessions"] == []
    assert tool(charlie_ctx, "read_inbox", unread_only=False)["messages"] == []
    assert Task.objects.get(pk=bobs_task.pk).state == "created"
    assert Message.objects.get(pk=to_bob.pk).acknowledged_at is None


def test_an_unexpected_error_is_a_tool_error_without_its_text(alice, monkeypatch):
    ctx = bound(register(alice))

    def broken(**kwargs: Any) -> Any:
        raise RuntimeError("secret-internal-detail")

    monkeypatch.setattr(agent_tools, "task_create", broken)
    result: Any = asyncio.run(
        server().call_tool("create_task", {"title": "t"}, context=ctx)  # type: ignore[arg-type]
    )

    assert result.is_error
    assert json.loads(result.content[0].text)["error"]["code"] == "internal_error"
    assert "secret-internal-detail" not in result.content[0].text
    assert not Task.objects.exists()
