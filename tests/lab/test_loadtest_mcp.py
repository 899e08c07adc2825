"""``manage.py loadtest --protocol mcp``: the same load as MCP tool calls against a live server
(figures are printed, never asserted; what is asserted is that the calls are real)."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from tenants.models import Tenant, User
from tests.atlas_platform.mcp.conftest import issue

pytestmark = pytest.mark.django_db(transaction=True)


def load(url: str, token: str, user: str, tmp_path: Path) -> dict[str, Any]:
    out = tmp_path / "load.json"
    call_command(
        "loadtest",
        url=url,
        token=token,
        user=user,
        clients="2",
        seconds=1.0,
        turn_every=2,
        protocol="mcp",
        json_path=str(out),
        stdout=StringIO(),
    )
    runs: list[dict[str, Any]] = json.loads(out.read_text())["runs"]
    return runs[0]


def test_recalls_and_turns_go_out_as_tool_calls(
    atlas_server: str, acme: Tenant, alice: User, tmp_path: Path
) -> None:
    run = load(atlas_server, issue(acme, alice), alice.external_id, tmp_path)

    assert run["requests"] >= 4 and run["errors"] == 0, run["error_samples"]
    assert run["recall_p95_ms"] > 0 and run["turn_p95_ms"] > 0
    from memory.services.recall import memory_recall

    hits = memory_recall(user=alice, query="note 0-2", memory_types=["episodic"]).hits
    assert any(h.doc.text.startswith("note 0-2:") for h in hits)  # record_turn really ran


def test_tool_errors_and_refusals_count_as_errors(
    atlas_server: str, acme: Tenant, alice: User, tmp_path: Path
) -> None:
    refused = load(atlas_server, "atlas_not_a_real_token", alice.external_id, tmp_path)
    assert refused["requests"] > 0 and refused["errors"] == refused["requests"]
    assert refused["error_samples"][0].startswith("401 ")

    # A tenant token naming a user that does not exist: refused before any tool runs.
    unknown = load(atlas_server, issue(acme), "nobody-here", tmp_path)
    assert unknown["requests"] > 0 and unknown["errors"] == unknown["requests"]
    assert unknown["error_samples"][0].startswith("404 ")


@pytest.mark.parametrize(
    ("answer", "failed"),
    [
        ('{"jsonrpc": "2.0", "id": 1, "result": {"content": [], "isError": false}}', False),
        ('{"jsonrpc": "2.0", "id": 1, "result": {"content": [], "isError": true}}', True),
        ('{"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "bad"}}', True),
        ("<html>502</html>", True),
    ],
)
def test_a_tool_error_or_a_json_rpc_error_is_a_failed_call(answer: str, failed: bool) -> None:
    from lab.management.commands.loadtest import McpCalls

    assert McpCalls.failed(answer) is failed
