"""One memory shape: REST's MemoryOut and the MCP tools render a memory through memory_json."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from memory.api.serializers import MemoryOut, RecallOut
from memory.engine.types import MemoryDoc
from memory.mcp.results import memory_out, recall_out
from memory.services.recall import RecallHit, RecallResult
from memory.shapes import memory_json

AT = datetime(2026, 3, 1, 12, 30, tzinfo=UTC)


def _doc(memory_type: str = "semantic", **fields: object) -> MemoryDoc:
    timestamp = fields.pop("timestamp", AT)
    return MemoryDoc(
        id="m1",
        tenant_id="1",
        user_id="7",
        memory_type=memory_type,  # type: ignore[arg-type]
        text="Alice takes oat milk",
        created_at=AT,
        timestamp=timestamp,  # type: ignore[arg-type]
        embedding=[0.1, 0.2],
        **fields,  # type: ignore[arg-type]
    )


def test_rest_and_mcp_show_the_same_fields_with_the_same_values():
    doc = _doc(fact_type="preference", metadata={"k": 1}, superseded_by="m2")

    rest = MemoryOut(doc).data
    mcp = memory_out(doc)

    assert rest == memory_json(doc)
    assert rest["memory_type"] == "semantic" and "type" not in rest
    assert rest["superseded"] is True and rest["created_at"] == "2026-03-01T12:30:00Z"
    assert mcp.items() <= rest.items()  # compact: a subset, never another name or value
    assert mcp["metadata"] == {"k": 1} and mcp["superseded"] is True
    for hidden in ("embedding", "tenant_id", "user_id"):
        assert hidden not in rest and hidden not in mcp


def test_mcp_leaves_out_empty_fields_and_those_meaningless_for_the_type():
    episode = memory_out(_doc("episodic", session_id="s-1"))
    playbook = memory_out(_doc("procedural", name="deploy"))

    assert episode["session_id"] == "s-1" and "name" not in episode and "tags" not in episode
    assert not {"use_count", "superseded", "version", "success_count"} & set(episode)
    assert playbook["version"] == 1 and playbook["success_count"] == 0
    assert "use_count" not in playbook and "superseded" not in playbook


def test_mcp_leaves_out_what_only_repeats_another_field_or_the_default():
    fresh = memory_out(_doc(confidence=1.0))
    used = memory_out(
        _doc(
            use_count=2, last_used_at=AT, confidence=0.7, timestamp=datetime(2025, 1, 2, tzinfo=UTC)
        )
    )

    assert not {"use_count", "last_used_at", "confidence", "timestamp"} & set(fresh)
    assert fresh["created_at"] == "2026-03-01T12:30:00Z" and fresh["superseded"] is False
    assert used["use_count"] == 2 and used["last_used_at"] == "2026-03-01T12:30:00Z"
    assert used["confidence"] == 0.7 and used["timestamp"] == "2025-01-02T00:00:00Z"


def test_a_recall_hit_is_the_memory_plus_its_ranking_on_both():
    # Recall's own fused score weighed the lexical leg by its BM25 scores (0.37: a ratio of
    # them, leg_confidence) and the leg scores are raw BM25 / cosine: neither is shown.
    hit = RecallHit(
        doc=_doc(),
        score=0.37 / 6 + 1 / 8,
        rank=1,
        leg_ranks={"lexical": 1, "dense": 3},
        leg_scores={"lexical": 7.31, "dense": 0.82},
    )
    result = RecallResult(
        hits=[hit], legs=["lexical"], reranker=None, reranked=False, timings_ms={}, took_ms=1.0
    )

    rest = RecallOut(result).data["hits"][0]
    mcp = recall_out(result)["memories"][0]

    ranks = {"lexical": 1, "dense": 3}
    assert rest == {
        **memory_json(hit.doc),
        "score": round(1 / 6 + 1 / 8, 6),  # the ranks' own fusion, every leg weighing 1
        "rank": 1,
        "leg_ranks": ranks,
    }
    assert mcp.items() <= rest.items() and mcp["leg_ranks"] == ranks
    shown = {json.dumps(rest), json.dumps(mcp)}
    for raw in ("7.31", "0.82", str(round(hit.score, 6))):
        assert not any(raw in text for text in shown)
