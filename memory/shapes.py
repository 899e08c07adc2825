"""The one JSON shape of a memory, for every interface (REST ``MemoryOut``, the MCP tools).

Field names are the service arguments' (``memory_type``, not ``type``); times are ISO 8601 in
UTC with a ``Z``; never the embedding or the internal tenant / user ids (a catalog document's
id is ``catalog:<key>``, the tenant's own key). ``compact`` (the MCP
tools: every token is the model's) leaves out the fields without a value, those that mean
nothing for the memory's type, and those that only repeat another or the default (``use_count``
and ``last_used_at`` of a memory never recalled, ``confidence`` 1.0, a ``timestamp`` within a
second of ``created_at``); the names and values of the rest are the same.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from memory.fusion import rank_score
from memory.services.catalog import catalog_public_id
from memory.services.recall import RecallHit
from memory.types import MemoryDoc

_PROCEDURAL = frozenset({"success_count", "failure_count", "last_success_at", "version"})
_SEMANTIC = frozenset({"use_count", "last_used_at", "superseded"})


def when(value: datetime | None) -> str | None:
    """DRF's ISO 8601 rendering: UTC with a ``Z``."""
    if value is None:
        return None
    text = value.astimezone(UTC).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def memory_json(doc: MemoryDoc, *, compact: bool = False) -> dict[str, Any]:
    """One memory as every interface shows it (see the module docstring for ``compact``)."""
    data = {
        "id": catalog_public_id(doc.id) if doc.memory_type == "catalog" else doc.id,
        "memory_type": doc.memory_type,
        "text": doc.text,
        "created_at": when(doc.created_at),
        "timestamp": when(doc.timestamp),
        "confidence": float(doc.confidence),
        "source": doc.source,
        "tags": [str(t) for t in doc.tags],
        "metadata": dict(doc.metadata),
        "project": doc.project,
        "session_id": doc.session_id,
        "session_inferred": bool(doc.session_inferred),
        "agent": doc.agent,
        "fact_type": doc.fact_type,
        "supersedes": [str(i) for i in doc.supersedes],
        "superseded_by": doc.superseded_by,
        "superseded_at": when(doc.superseded_at),
        "superseded": doc.is_superseded,
        "contradiction": doc.contradiction,
        "supporting_episode_ids": [str(i) for i in doc.supporting_episode_ids],
        "valid_from": when(doc.valid_from),
        "valid_to": when(doc.valid_to),
        "last_used_at": when(doc.last_used_at),
        "use_count": int(doc.use_count),
        "name": doc.name,
        "description": doc.description,
        "trigger": doc.trigger,
        "steps": [dict(step) for step in doc.steps],
        "success_count": int(doc.success_count),
        "failure_count": int(doc.failure_count),
        "last_success_at": when(doc.last_success_at),
        "version": int(doc.version),
    }
    return _compact(data, doc) if compact else data


def recall_hit_json(hit: RecallHit, *, compact: bool = False) -> dict[str, Any]:
    """A recalled memory plus where recall ranked it: ranks, and a score made of ranks only
    (``fusion.rank_score``), never a raw lexical score or one derived from it."""
    ranking = {"rank": hit.rank, "score": rank_score(hit.leg_ranks), "leg_ranks": hit.leg_ranks}
    return {**ranking, **memory_json(hit.doc, compact=compact)}


def _compact(data: dict[str, Any], doc: MemoryDoc) -> dict[str, Any]:
    meaningless: set[str] = set()
    if doc.memory_type != "procedural":
        meaningless |= _PROCEDURAL
    if doc.memory_type != "semantic":
        meaningless |= _SEMANTIC
    # Values that only repeat another field or the default: a memory never recalled (its
    # "last use" is its creation), full confidence, a timestamp that is the time it was stored.
    if int(doc.use_count) == 0:
        meaningless |= {"use_count", "last_used_at"}
    if not doc.session_inferred:
        meaningless.add("session_inferred")
    if float(doc.confidence) == 1.0:
        meaningless.add("confidence")
    if doc.timestamp is not None and abs((doc.timestamp - doc.created_at).total_seconds()) < 1:
        meaningless.add("timestamp")
    return {
        key: value
        for key, value in data.items()
        if key not in meaningless and value is not None and value != [] and value != {}
    }
