"""The knowledge MCP tools through the official SDK client, over HTTP, against a live Atlas
server (the composition root's app): each tool answers for the token's user only."""

from __future__ import annotations

from typing import Any

import pytest

from tenants.models import Tenant, User
from tests.atlas_platform.mcp.conftest import issue, mcp_session, payload, run
from tests.knowledge.conftest import fm, project_of, writer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services]


def calls(url: str, token: str, *steps: tuple[str, dict[str, Any]]) -> list[Any]:
    async def scenario() -> list[Any]:
        async with mcp_session(f"{url}/mcp/", token) as session:
            return [await session.call_tool(name, args) for name, args in steps]

    return run(scenario)


def test_the_graph_tools_answer_for_the_tokens_user_only(
    atlas_server: str, acme: Tenant, globex: Tenant, alice: User, charlie: User
) -> None:
    mine = project_of(alice)
    note = writer(alice, mine)
    note("docs/a.md", fm(id="a", status="blocked", blocked_by="b", body="Quokka habitat survey.\n"))
    note("docs/b.md", fm(id="b", status="open", body="Permit from the ranger.\n"))
    theirs = project_of(charlie, remote="git@github.com:globex/zoo.git")
    writer(charlie, theirs)("docs/q.md", fm(id="q", body="Quokka habitat survey secrets.\n"))
    key = mine.key
    results = calls(
        atlas_server,
        issue(acme, alice),
        ("graph_search", {"query": "quokka habitat"}),
        ("graph_related", {"project": key, "key": "a", "depth": 2}),
        ("graph_blockers", {"project": key, "stale_days": 0}),
        (
            "graph_diff",
            {"project": key, "since": "2020-01-01T00:00:00Z", "until": "2100-01-01T00:00:00Z"},
        ),
        ("graph_handoff", {"project": key, "token_budget": 1000}),
        ("entity_get", {"project": key, "key": "a"}),
        ("entity_get", {"project": theirs.key, "key": "q"}),
    )
    search, related, blockers, diff, handoff, entity, foreign = results
    found = [h["entity"]["key"] for h in payload(search)["results"]]
    assert found[0] == "a" and "q" not in found
    assert {n["key"] for n in payload(related)["nodes"]} == {"b"}
    assert [r["entity"]["key"] for r in payload(blockers)["results"]] == ["a"]
    assert payload(diff)["created"] == ["a", "b"]
    assert "## Active blockers" in payload(handoff)["markdown"]
    assert payload(entity)["entity"]["body"] == "Quokka habitat survey.\n"
    assert foreign.is_error and payload(foreign)["error"]["code"] == "project_not_found"
    (charlies,) = calls(atlas_server, issue(globex, charlie), ("graph_search", {"query": "quokka"}))
    assert {h["entity"]["key"] for h in payload(charlies)["results"]} == {"q"}


def test_the_graph_tools_take_the_project_as_the_agent_knows_it(
    atlas_server: str, acme: Tenant, alice: User
) -> None:
    from agents.services.sessions import session_start
    from tests.agents.conftest import bound_token, register

    app = project_of(alice)
    writer(alice, app)("docs/a.md", fm(id="a", status="blocked", blocked_by="b", body="A.\n"))
    project_of(alice, remote="git@github.com:acme/site.git", name="twin")
    project_of(alice, remote="git@github.com:acme/site2.git", name="twin")
    agent = register(alice)
    session_start(agent=agent, session_id="s-1", project_key=app.key)
    names = ["app", "APP", "git@github.com:acme/app.git", "https://github.com/acme/app", "current"]
    results = calls(
        atlas_server,
        bound_token(agent),
        *[("graph_blockers", {"project": name, "stale_days": 0}) for name in names],
        ("graph_blockers", {"project": "twin"}),
        ("graph_blockers", {"project": "nowhere"}),
    )
    *named, twin, nowhere = results
    for name, result in zip(names, named, strict=True):
        assert [r["entity"]["key"] for r in payload(result)["results"]] == ["a"], name
    assert twin.is_error and payload(twin)["error"]["code"] == "ambiguous_project"
    assert nowhere.is_error and payload(nowhere)["error"]["code"] == "project_not_found"
    (unbound,) = calls(atlas_server, issue(acme, alice), ("graph_blockers", {"project": "current"}))
    assert unbound.is_error and payload(unbound)["error"]["code"] == "no_current_project"
