"""What a tool result weighs on the wire: the payload once (no structured copy beside the text),
compact memories (no empty or meaningless fields), so a recall of 8 short facts stays well under
what the issue measured (8 hits ~ 850 tokens, the payload sent twice)."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from memory.services.writes import memory_write
from tenants.models import Tenant, User
from tests.atlas_platform.mcp.conftest import issue, mcp_session, payload, run

pytestmark = pytest.mark.django_db(transaction=True)
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
FACTS = [
    "Alice rows on the river on Sundays",
    "Alice's rowing club is Thames RC",
    "Alice prefers early morning rowing",
    "Alice rows a single scull",
    "Alice's coach is called Priya",
    "Alice trains for the Head of the River race",
    "Alice stores her oars at the club boathouse",
    "Alice rowed at university",
]
# Per hit, beyond the fact's own text: id (32), type, times, rank, score, leg ranks, keys and
# punctuation. The issue's measure was ~850 tokens (~3,400 bytes) for 8 hits, sent twice.
BYTES_PER_HIT_BUDGET = 260


def test_a_recall_of_eight_facts_is_sent_once_and_compact(
    atlas_server: str, acme: Tenant, alice: User
) -> None:
    for text in FACTS:
        memory_write(user=alice, text=text, memory_type="semantic")
    token = issue(acme, alice)
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "recall_memory",
            "arguments": {"query": "Alice rowing", "k": 8, "include_catalog": False},
        },
    }

    response = httpx2.post(
        f"{atlas_server}/mcp/",
        json=call,
        headers={**HEADERS, "Authorization": f"Bearer {token}"},
        timeout=30,
    )

    assert response.status_code == 200, response.text
    raw = response.content
    result = response.json()["result"]
    assert "structuredContent" not in result or result["structuredContent"] is None
    (content,) = result["content"]
    data = json.loads(content["text"])
    hits = data["memories"]
    assert len(hits) == 8 and {h["text"] for h in hits} == set(FACTS)
    for text in FACTS:  # each memory's text is on the wire exactly once
        assert raw.count(json.dumps(text)[1:-1].encode()) == 1, text
    overhead = len(raw) - sum(len(text.encode()) for text in FACTS)
    assert overhead <= 8 * BYTES_PER_HIT_BUDGET + 400, (len(raw), overhead)
    for hit in hits:  # compact: nothing empty, nothing a fact does not have
        assert all(value not in (None, "", [], {}) for value in hit.values()), hit
        assert not {"steps", "success_count", "failure_count", "trigger"} & set(hit), hit


def test_the_sdk_sees_the_same_single_copy(atlas_server: str, acme: Tenant, alice: User) -> None:
    for text in FACTS[:3]:
        memory_write(user=alice, text=text, memory_type="semantic")

    token = issue(acme, alice)

    async def scenario() -> Any:
        async with mcp_session(f"{atlas_server}/mcp/", token) as session:
            return await session.call_tool("about_me", {})

    result = run(scenario)

    data = payload(result)  # asserts no structured copy beside the text
    assert {f["text"] for f in data["facts"]} == set(FACTS[:3])
