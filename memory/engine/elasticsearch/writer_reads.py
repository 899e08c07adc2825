"""Reads with the writer credential, outside any user's scope (no ``dls`` key): by tenant and
user id, for the platform's own work: the previous turn of a session (a turn's context, read
as it is written), a user's document ids and how many remain (erasure, reindex checks), a
tenant's growth (operators' dashboards). A user's recall never comes through here: its reads
are ``reads``, run as the scope's credential.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from memory.engine.elasticsearch.archive import archive_index
from memory.engine.elasticsearch.client import Connection, call
from memory.engine.elasticsearch.queries import previous_turn_body, user_query
from memory.engine.types import (
    ENTITY,
    MEMORY_TYPES,
    GrowthBucket,
    GrowthPoint,
    MemoryDoc,
    MemoryType,
)

Json = dict[str, Any]


def previous_turn(
    conn: Connection, tenant_id: str, user_id: str, session_id: str, before: datetime
) -> MemoryDoc | None:
    """One bounded search with the writer credential (``MemoryBackend.previous_turn``)."""
    body = previous_turn_body(tenant_id, user_id, session_id, before)
    index = conn.index_for(tenant_id, user_id)
    response = call(
        "read the previous turn",
        lambda: conn.writer.search(index=index, routing=user_id, ignore_unavailable=True, **body),
    )
    hits = response["hits"]["hits"]
    return MemoryDoc.from_source(hits[0]["_source"]) if hits else None


def user_indices(conn: Connection, tenant_id: str, user_id: str, memory_type: str) -> list[str]:
    """Where the user's documents of a type are: the hot index, and for facts its archive."""
    live = conn.index_for(tenant_id, user_id)
    return [live, archive_index(conn, tenant_id, user_id)] if memory_type == "semantic" else [live]


def user_hits(
    conn: Connection,
    tenant_id: str,
    user_id: str,
    memory_type: MemoryType,
    among: list[str] | None,
    limit: int,
) -> list[Json]:
    """Up to ``limit`` of the user's documents of one type (ids and routing, no source), in id
    order, with the writer credential."""
    body: Json = {
        "size": limit,
        "_source": False,
        "track_total_hits": False,
        "query": user_query(tenant_id, user_id, memory_type, among),
        "sort": [{"id": "asc"}],
    }
    # No routing: every document of the user is found, whatever it was stored under.
    index = user_indices(conn, tenant_id, user_id, memory_type)
    response = call(
        "search", lambda: conn.writer.search(index=index, ignore_unavailable=True, **body)
    )
    hits: list[Json] = response["hits"]["hits"]
    return hits


def growth(conn: Connection, tenant_id: str, *, bucket: GrowthBucket) -> list[GrowthPoint]:
    body: Json = {
        "size": 0,
        "query": {"bool": {"filter": [{"term": {"tenant_id": tenant_id}}]}},
        "aggs": {
            "buckets": {
                "date_histogram": {
                    "field": "created_at",
                    "calendar_interval": bucket,
                    "time_zone": "UTC",
                    "min_doc_count": 1,
                },
                "aggs": {"types": {"terms": {"field": "memory_type", "size": len(MEMORY_TYPES)}}},
            }
        },
    }
    # The tenant's index and its users' own indices (per-user statistics), archives included.
    tenant_index = conn.config.tenant_index(tenant_id)
    indices = [tenant_index, conn.config.archive_index(tenant_index), f"{tenant_index}-u-*"]
    response = call(
        "count growth",
        lambda: conn.writer.search(
            index=indices, ignore_unavailable=True, allow_no_indices=True, **body
        ),
    )
    points = [
        GrowthPoint(
            start=datetime.fromtimestamp(b["key"] / 1000, tz=UTC),
            memory_type=t["key"],
            count=int(t["doc_count"]),
        )
        # No aggregations at all when none of the indices exists yet (nothing written).
        for b in response.body.get("aggregations", {}).get("buckets", {}).get("buckets", [])
        for t in b["types"]["buckets"]
    ]
    return sorted(points, key=lambda p: (p.start, p.memory_type))


def find_ids(
    conn: Connection,
    *,
    tenant_id: str,
    user_id: str,
    memory_type: MemoryType,
    among: list[str] | None,
    limit: int,
) -> list[str]:
    if limit <= 0 or among == []:
        return []
    return [h["_id"] for h in user_hits(conn, tenant_id, user_id, memory_type, among, limit)]


def count_ids(
    conn: Connection,
    *,
    tenant_id: str,
    user_id: str,
    memory_type: MemoryType,
    among: list[str] | None,
) -> int:
    if among == []:
        return 0
    query = user_query(tenant_id, user_id, memory_type, among)
    index = user_indices(conn, tenant_id, user_id, memory_type)
    response = call(
        "count documents",
        lambda: conn.writer.count(index=index, query=query, ignore_unavailable=True),
    )
    return int(response["count"])


def tenant_memory_totals(conn: Connection, tenant_ids: list[str]) -> dict[str, int]:
    """Memories (not ``entity`` documents) per tenant across their indices, in one search."""
    if not tenant_ids:
        return {}
    body: Json = {
        "size": 0,
        "query": {
            "bool": {
                "filter": [{"terms": {"tenant_id": tenant_ids}}],
                "must_not": [{"term": {"memory_type": ENTITY}}],
            }
        },
        "aggs": {"tenants": {"terms": {"field": "tenant_id", "size": len(tenant_ids)}}},
    }
    # Every tenant's index and its users' (one short pattern, whatever the number of tenants:
    # a list of names would outgrow the request line); the terms filter picks the tenants.
    indices = f"{conn.config.index_prefix}-t-*"
    response = call(
        "count tenant memories",
        lambda: conn.writer.search(
            index=indices, ignore_unavailable=True, allow_no_indices=True, **body
        ),
    )
    buckets = response.body.get("aggregations", {}).get("tenants", {}).get("buckets", [])
    return dict.fromkeys(tenant_ids, 0) | {b["key"]: int(b["doc_count"]) for b in buckets}
