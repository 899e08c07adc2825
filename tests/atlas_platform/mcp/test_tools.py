"""The MCP tools end to end: the official SDK client over HTTP against a live Atlas server."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tenants.models import AuditEvent, PlatformToken, Tenant, User
from tests.atlas_platform.mcp.conftest import (
    issue,
    mcp_session,
    payload,
    recalls_meet_in_pairs,
    run,
)

pytestmark = pytest.mark.django_db(transaction=True)

TOOL_NAMES = {
    "recall_memory",
    "write_memory",
    "forget_memory",
    "record_turn",
    "record_reply",
    "record_playbook_outcome",
    "about_me",
    "memory_history",
}
# The agents app's tools, which the composition root adds to the same server.
AGENT_TOOL_NAMES = {
    "create_task",
    "update_task",
    "list_tasks",
    "send_message",
    "read_inbox",
    "ack_message",
    "session_history",
}
# The knowledge graph's tools (knowledge/mcp.py), added the same way.
KNOWLEDGE_TOOL_NAMES = {
    "graph_search",
    "graph_related",
    "graph_blockers",
    "graph_diff",
    "graph_handoff",
    "entity_get",
}


def _own(atlas_server: str) -> str:
    return f"{atlas_server}/mcp/"


def test_it_lists_the_memory_tools_with_described_schemas(
    atlas_server: str, acme: Tenant, alice: User
) -> None:
    token = issue(acme, alice)

    async def scenario() -> list[Any]:
        async with mcp_session(_own(atlas_server), token) as session:
            return (await session.list_tools()).tools

    tools = run(scenario)
    assert {t.name for t in tools} == TOOL_NAMES | AGENT_TOOL_NAMES | KNOWLEDGE_TOOL_NAMES
    for tool in tools:
        assert tool.description and len(tool.description) > 40, tool.name
        for name, prop in tool.input_schema["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
    by_name = {t.name: t for t in tools}
    assert "supersedes" in by_name["write_memory"].description
    assert "explicitly" in by_name["forget_memory"].description
    assert by_name["recall_memory"].input_schema["properties"]["k"]["maximum"] == 20
    assert by_name["recall_memory"].annotations.read_only_hint is True
    assert by_name["forget_memory"].annotations.destructive_hint is True


def test_sarah_moves_and_recall_only_shows_where_she_lives_now(
    atlas_server: str, acme: Tenant, alice: User
) -> None:
    token = issue(acme, alice)

    async def scenario() -> tuple[dict[str, Any], ...]:
        async with mcp_session(_own(atlas_server), token) as session:
            old = payload(
                await session.call_tool(
                    "write_memory",
                    {
                        "memory_type": "semantic",
                        "text": "Sarah lives in Bristol",
                        "fact_type": "world",
                    },
                )
            )["memory"]
            new = payload(
                await session.call_tool(
                    "write_memory",
                    {
                        "memory_type": "semantic",
                        "text": "We left Bristol; Sarah now lives in Edinburgh",
                        "supersedes": [old["id"]],
                        "contradiction": "natural",
                    },
                )
            )["memory"]
            recalled = payload(
                await session.call_tool("recall_memory", {"query": "where does Sarah live?"})
            )
            history = payload(await session.call_tool("memory_history", {"memory_id": old["id"]}))
            return old, new, recalled, history

    old, new, recalled, history = run(scenario)
    memories = recalled["memories"]
    assert memories[0]["id"] == new["id"]
    assert "Edinburgh" in memories[0]["text"]
    assert old["id"] not in {m["id"] for m in memories}
    assert not any(m["text"] == "Sarah lives in Bristol" for m in memories)
    chain = history["chain"]
    assert [m["id"] for m in chain] == [old["id"], new["id"]]
    assert chain[0]["superseded_by"] == new["id"] and chain[0]["superseded"] is True
    assert chain[1]["supersedes"] == [old["id"]] and chain[1]["superseded"] is False


def test_a_fact_written_in_a_turn_is_recalled_in_the_same_turn(
    atlas_server: str, acme: Tenant, alice: User
) -> None:
    token = issue(acme, alice)

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        async with mcp_session(_own(atlas_server), token) as session:
            written = payload(
                await session.call_tool(
                    "write_memory",
                    {
                        "memory_type": "semantic",
                        "text": "Alice's build server runs PostgreSQL 16.4",
                        "fact_type": "world",
                    },
                )
            )["memory"]
            recalled = payload(
                await session.call_tool(
                    "recall_memory",
                    {"query": "PostgreSQL 16.4 build server", "memory_types": ["semantic"], "k": 3},
                )
            )
            return written, recalled

    written, recalled = run(scenario)
    assert recalled["memories"][0]["id"] == written["id"]
    assert recalled["memories"][0]["rank"] == 1


def test_a_turn_is_recorded_and_recalls_on_the_users_words(
    atlas_server: str, acme: Tenant, alice: User
) -> None:
    token = issue(acme, alice)

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        async with mcp_session(_own(atlas_server), token) as session:
            await session.call_tool(
                "write_memory",
                {"memory_type": "semantic", "text": "Alice deploys with the ERR_4417 workaround"},
            )
            turn = payload(
                await session.call_tool(
                    "record_turn",
                    {"text": "ERR_4417 again on deploy", "session_id": "s-1", "agent": "claude"},
                )
            )
            recalled = payload(
                await session.call_tool(
                    "recall_memory", {"query": "ERR_4417", "memory_types": ["episodic"]}
                )
            )
            return turn, recalled

    turn, recalled = run(scenario)
    episode = turn["episode"]
    assert episode["memory_type"] == "episodic" and episode["session_id"] == "s-1"
    assert "ERR_4417" in turn["recalled"]["memories"][0]["text"]
    assert episode["id"] not in {m["id"] for m in turn["recalled"]["memories"]}
    assert recalled["memories"][0]["id"] == episode["id"]


def test_superseding_an_unknown_id_is_a_tool_error_and_writes_nothing(
    atlas_server: str, acme: Tenant, alice: User
) -> None:
    token = issue(acme, alice)
    before = AuditEvent.objects.filter(action__startswith="memory.").count()

    async def scenario() -> Any:
        async with mcp_session(_own(atlas_server), token) as session:
            return await session.call_tool(
                "write_memory",
                {"memory_type": "semantic", "text": "Sarah moved again", "supersedes": ["nope"]},
            )

    result = run(scenario)
    assert result.is_error
    error = payload(result)["error"]
    assert error.pop("request_id")
    assert error == {"code": "memory_not_found", "message": "No memory 'nope' for this user."}
    assert "No memory 'nope' for this user." in result.content[0].text
    assert AuditEvent.objects.filter(action__startswith="memory.").count() == before


def test_bad_arguments_are_a_tool_error_not_a_crash(
    atlas_server: str, acme: Tenant, alice: User
) -> None:
    token = issue(acme, alice)

    async def scenario() -> tuple[Any, Any]:
        async with mcp_session(_own(atlas_server), token) as session:
            too_many = await session.call_tool("recall_memory", {"query": "x", "k": 21})
            empty = await session.call_tool(
                "write_memory", {"memory_type": "semantic", "text": "   "}
            )
            return too_many, empty

    too_many, empty = run(scenario)
    schema_error, domain_error = payload(too_many)["error"], payload(empty)["error"]
    assert too_many.is_error and schema_error["code"] == "invalid_arguments"
    assert schema_error["message"].startswith("Invalid arguments: k: ")
    assert "validation error" not in schema_error["message"]  # not pydantic's raw text
    assert empty.is_error and domain_error["code"] == "empty_text"
    assert set(schema_error) == set(domain_error) == {"code", "message", "request_id"}


def test_forget_deletes_and_the_audit_names_the_token(
    atlas_server: str, acme: Tenant, alice: User
) -> None:
    token = issue(acme, alice)

    async def scenario() -> tuple[Any, ...]:
        async with mcp_session(_own(atlas_server), token) as session:
            fact = payload(
                await session.call_tool(
                    "write_memory",
                    {"memory_type": "semantic", "text": "Alice's locker code is 4417"},
                )
            )["memory"]
            forgotten = payload(await session.call_tool("forget_memory", {"memory_id": fact["id"]}))
            recalled = payload(await session.call_tool("recall_memory", {"query": "locker code"}))
            again = await session.call_tool("forget_memory", {"memory_id": fact["id"]})
            return fact, forgotten, recalled, again

    fact, forgotten, recalled, again = run(scenario)
    assert forgotten == {"forgotten": fact["id"]}
    assert fact["id"] not in {m["id"] for m in recalled["memories"]}
    assert again.is_error and payload(again)["error"]["code"] == "memory_not_found"
    event = AuditEvent.objects.get(action="memory.forget")
    token_row = PlatformToken.objects.get(user=alice)
    assert (event.actor_type, event.actor_id) == ("token", str(token_row.pk))
    assert event.actor_label == token_row.name
    assert event.subject_user_id == alice.pk
    assert len(event.request_id) >= 8


def test_a_playbook_is_written_with_its_steps(atlas_server: str, acme: Tenant, alice: User) -> None:
    token = issue(acme, alice)
    steps = [
        {"order": 1, "instruction": "Run the migrations", "tool": "manage.py"},
        {"order": 2, "instruction": "Restart the workers"},
    ]

    async def scenario() -> Any:
        async with mcp_session(_own(atlas_server), token) as session:
            return payload(
                await session.call_tool(
                    "write_memory",
                    {
                        "memory_type": "procedural",
                        "text": "How Alice deploys",
                        "name": "deploy",
                        "trigger": "a release is tagged",
                        "steps": steps,
                    },
                )
            )["memory"]

    playbook = run(scenario)
    assert playbook["memory_type"] == "procedural" and playbook["name"] == "deploy"
    assert [s["instruction"] for s in playbook["steps"]] == [s["instruction"] for s in steps]


def test_a_tenant_token_acts_for_the_user_named_in_the_path(
    atlas_server: str, acme: Tenant, alice: User, bob: User
) -> None:
    token = issue(acme)

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        async with mcp_session(f"{atlas_server}/api/atlas/mcp/alice", token) as session:
            await session.call_tool(
                "write_memory", {"memory_type": "semantic", "text": "Alice prefers tea"}
            )
            alices = payload(await session.call_tool("recall_memory", {"query": "tea"}))
        async with mcp_session(f"{atlas_server}/api/atlas/mcp/bob", token) as session:
            bobs = payload(await session.call_tool("recall_memory", {"query": "tea"}))
        return alices, bobs

    alices, bobs = run(scenario)
    assert [m["text"] for m in alices["memories"]] == ["Alice prefers tea"]
    assert bobs["memories"] == []
    event = AuditEvent.objects.get(action="memory.write")
    assert event.subject_user_id == alice.pk and event.actor_type == "token"


def test_concurrent_tool_calls_run_in_parallel_not_one_after_another(
    atlas_server: str, acme: Tenant, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two recalls that each wait for the other can only both finish if the server runs them
    at the same time (on one shared thread the first would wait out the barrier's timeout)."""
    import anyio

    from memory.mcp import tools

    recalls_meet_in_pairs(monkeypatch, tools)
    token = issue(acme, alice)
    results: list[Any] = []

    async def one() -> None:
        async with mcp_session(_own(atlas_server), token) as session:
            results.append(await session.call_tool("recall_memory", {"query": "rowing"}))

    async def scenario() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(one)
            group.start_soon(one)

    run(scenario)
    assert len(results) == 2
    assert not any(r.is_error for r in results), [payload(r) for r in results]


def test_a_tool_whose_service_fails_unexpectedly_is_a_tool_error_without_its_text(
    atlas_server: str, acme: Tenant, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory.mcp import tools

    secret = "internal detail: password=hunter2 at 10.0.0.7:9200"

    def broken(**kwargs: Any) -> Any:
        raise RuntimeError(secret)

    monkeypatch.setattr(tools, "memory_recall", broken)
    token = issue(acme, alice)

    async def scenario() -> Any:
        async with mcp_session(_own(atlas_server), token) as session:
            return await session.call_tool("recall_memory", {"query": "anything"})

    result = run(scenario)
    assert result.is_error
    error = payload(result)["error"]
    assert error["code"] == "internal_error" and error["request_id"]
    assert secret not in result.content[0].text and "RuntimeError" not in result.content[0].text
    assert secret not in json.dumps(error)


def test_the_assistant_side_outcomes_and_about_me(atlas_server: str, acme: Tenant, alice: User):
    """record_reply keeps the assistant's answer (recallable, source assistant, no recall run),
    record_playbook_outcome counts and refines a playbook, about_me lists current facts and
    playbooks with counts; results are compact (no empty fields, the payload once)."""
    token = issue(acme, alice)

    async def scenario() -> dict[str, Any]:
        async with mcp_session(_own(atlas_server), token) as session:
            turn = payload(
                await session.call_tool("record_turn", {"text": "My printer jams on duplex jobs"})
            )
            reply = payload(
                await session.call_tool(
                    "record_reply", {"text": "I suggested cleaning the duplex rollers"}
                )
            )
            old = payload(
                await session.call_tool(
                    "write_memory", {"memory_type": "semantic", "text": "Alice prints in colour"}
                )
            )["memory"]
            await session.call_tool(
                "write_memory",
                {
                    "memory_type": "semantic",
                    "text": "Alice prints in black and white",
                    "supersedes": [old["id"]],
                },
            )
            play = payload(
                await session.call_tool(
                    "write_memory",
                    {
                        "memory_type": "procedural",
                        "text": "Clear a duplex jam",
                        "name": "duplex jam",
                        "steps": [{"instruction": "Open the back door"}],
                    },
                )
            )["memory"]
            outcome = payload(
                await session.call_tool(
                    "record_playbook_outcome",
                    {
                        "memory_id": play["id"],
                        "success": True,
                        "refined_steps": [
                            {"instruction": "Open the back door"},
                            {"instruction": "Pull the roller"},
                        ],
                    },
                )
            )["memory"]
            recalled = payload(
                await session.call_tool(
                    "recall_memory",
                    {"query": "what did you suggest for the duplex?", "memory_types": ["episodic"]},
                )
            )
            about = payload(await session.call_tool("about_me", {}))
            return {
                "turn": turn,
                "reply": reply,
                "outcome": outcome,
                "recalled": recalled,
                "about": about,
            }

    got = run(scenario)
    episode = got["reply"]["episode"]
    assert episode["source"] == "assistant" and episode["memory_type"] == "episodic"
    # Neither named a session: the reply joined the turn's inferred session.
    assert got["turn"]["episode"]["session_inferred"] is True
    assert episode["session_id"] == got["turn"]["episode"]["session_id"]
    assert episode["session_inferred"] is True
    assert "recalled" not in got["reply"]
    assert got["outcome"]["success_count"] == 1 and got["outcome"]["version"] == 2
    assert [s["instruction"] for s in got["outcome"]["steps"]][-1] == "Pull the roller"
    texts = [m["text"] for m in got["recalled"]["memories"]]
    assert "I suggested cleaning the duplex rollers" in texts
    about = got["about"]
    assert [f["text"] for f in about["facts"]] == ["Alice prints in black and white"]
    assert [p["name"] for p in about["playbooks"]] == ["duplex jam"]
    assert about["counts"] == {"episodic": 2, "semantic": 2, "procedural": 1}
    assert all(v not in (None, [], {}) for f in about["facts"] for v in f.values())
    assert AuditEvent.objects.filter(action="memory.reply", subject_user=alice).count() == 1


def test_the_handshake_reports_the_version_and_only_tools(
    atlas_server: str, acme: Tenant, alice: User
) -> None:
    from importlib import metadata

    token = issue(acme, alice)
    headers = {"Authorization": f"Bearer {token}"}

    async def scenario() -> Any:
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            streamable_http_client(_own(atlas_server), http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            return await session.initialize()

    init = run(scenario)
    assert init.server_info.name == "atlas"
    assert init.server_info.version == metadata.version("atlas") != ""
    assert init.capabilities.tools is not None
    assert init.capabilities.prompts is None and init.capabilities.resources is None
