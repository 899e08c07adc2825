"""Reads in a scope (a user's, or a tenant's catalog): scope filters always, and the user's
key under ``dls`` (``client.Connection.read``). The writer credential's own reads, outside any
scope, are ``writer_reads``.

Recall's two legs go out in one ``_msearch`` and return ids only (``queries.LEG_FIELDS``); recall
then reads the few documents it returns with ``get_many``, whose ``_source`` leaves the
embedding out (``queries.NO_VECTORS``).
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from memory.engine.base import EngineError
from memory.engine.elasticsearch.archive import scope_archives
from memory.engine.elasticsearch.client import Connection
from memory.engine.elasticsearch.queries import (
    NO_VECTORS,
    TIMESTAMP_VALUE,
    dense_body,
    leg_filters,
    lexical_body,
    recall_types,
    scope_filter,
    scope_routing,
)
from memory.engine.types import (
    MEMORY_TYPES,
    LegHit,
    LegQuery,
    LegResults,
    MemoryDoc,
    MemoryType,
    Neighbours,
    ReadScope,
    RecallFilter,
    SessionTurn,
)

Json = dict[str, Any]


def get_many(conn: Connection, scope: ReadScope, memory_ids: list[str]) -> list[MemoryDoc]:
    if not memory_ids:
        return []
    body: Json = {
        "size": len(set(memory_ids)),
        "query": {"bool": {"filter": [{"ids": {"values": memory_ids}}, *scope_filter(scope)]}},
        **NO_VECTORS,
    }
    hits = conn.search(scope, scope_routing(scope), body)["hits"]["hits"]
    by_id = {doc.id: doc for doc in (MemoryDoc.from_source(h["_source"]) for h in hits)}
    missing = [i for i in dict.fromkeys(memory_ids) if i not in by_id]
    archives = scope_archives(conn, scope)
    if missing and archives:  # archived facts (recall's reads find all theirs in the hot index)
        body["size"] = len(missing)
        body["query"]["bool"]["filter"][0] = {"ids": {"values": missing}}
        more = conn.search(scope, scope_routing(scope), body, indices=archives)["hits"]["hits"]
        by_id.update((d.id, d) for d in (MemoryDoc.from_source(h["_source"]) for h in more))
    return [by_id[i] for i in memory_ids if i in by_id]


def vectors(conn: Connection, scope: ReadScope, memory_ids: list[str]) -> dict[str, list[float]]:
    """The hot index's stored vectors of those of ``memory_ids`` inside ``scope``."""
    if not memory_ids:
        return {}
    body: Json = {
        "size": len(set(memory_ids)),
        "query": {"bool": {"filter": [{"ids": {"values": memory_ids}}, *scope_filter(scope)]}},
        "_source": ["id", "embedding"],
    }
    hits = conn.search(scope, scope_routing(scope), body)["hits"]["hits"]
    return {
        h["_source"]["id"]: [float(x) for x in h["_source"]["embedding"]]
        for h in hits
        if h["_source"].get("embedding")
    }


def similarities(
    conn: Connection, scope: ReadScope, memory_ids: list[str], vector: list[float]
) -> dict[str, float]:
    """The cosine of ``vector`` to each document's stored vector, scored on the cluster (only
    ids and scores come back): a kNN query whose filter is the ids, so it is exact over them."""
    wanted = list(dict.fromkeys(memory_ids))
    if not wanted:
        return {}
    body: Json = {
        "size": len(wanted),
        "track_total_hits": False,
        "query": {
            "knn": {
                "field": "embedding",
                "query_vector": vector,
                "k": len(wanted),
                # More candidates than the filter can match: the node searches them exactly.
                "num_candidates": min(10_000, 2 * len(wanted) + 10),
                "filter": [{"ids": {"values": wanted}}, *scope_filter(scope)],
            }
        },
        "_source": ["id"],
    }
    hits = conn.search(scope, scope_routing(scope), body)["hits"]["hits"]
    # A cosine field scores (1 + cosine) / 2.
    return {h["_source"]["id"]: 2.0 * float(h["_score"]) - 1.0 for h in hits}


def recall_legs(conn: Connection, scope: ReadScope, query: LegQuery) -> LegResults:
    types = recall_types(scope, query.filter)
    archives = scope_archives(conn, scope) if query.filter.include_archived else []
    header: Json = {
        "index": conn.scope_indices(scope) + archives,
        "routing": scope_routing(scope),
        "ignore_unavailable": True,
    }
    filters = leg_filters(scope, types, query.filter)
    legs: list[tuple[str, Json, Json]] = []
    if types and query.lexical and query.text.strip():
        # DFS shares term statistics across shards: a user's documents and the catalog are
        # routed apart, and their BM25 scores must be comparable (the catalog prior is a
        # ratio of them).
        dfs = {**header, "search_type": "dfs_query_then_fetch"}
        legs.append(("lexical", dfs, lexical_body(query, filters)))
    if types and query.dense and query.vector is not None:
        legs.append(("dense", header, dense_body(query, query.vector, filters)))
    results = LegResults()
    if not legs:
        return results
    searches = [part for _, head, body in legs for part in (head, body)]
    started = time.perf_counter()
    response = conn.read(
        scope,
        "recall",
        lambda client: client.msearch(searches=searches, max_concurrent_searches=len(legs)),
    )
    results.took_ms = (time.perf_counter() - started) * 1000.0
    for (leg, _, _), answer in zip(legs, response["responses"], strict=True):
        if "error" in answer:
            raise EngineError(f"Elasticsearch failed the {leg} leg: {answer['error']}")
        hits = [_leg_hit(h, n) for n, h in enumerate(answer["hits"]["hits"], start=1)]
        setattr(results, leg, hits)
    return results


def _leg_hit(hit: Json, rank: int) -> LegHit:
    fields = hit["fields"]
    session_id = (fields.get("session_id") or [None])[0]
    return LegHit(
        id=fields["id"][0],
        score=float(hit["_score"]),
        rank=rank,
        superseded_by=(fields.get("superseded_by") or [None])[0],
        session_id=session_id,
        timestamp=_instant(fields["timestamp"][0]) if session_id else None,
    )


def _instant(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def scan(
    conn: Connection,
    scope: ReadScope,
    *,
    memory_types: tuple[MemoryType, ...],
    include_superseded: bool,
    search_after: tuple[str, str] | None,
    limit: int,
    only_superseded: bool,
    created_from: datetime | None,
    created_to: datetime | None,
) -> list[MemoryDoc]:
    types = tuple(dict.fromkeys(memory_types))
    if not types or limit <= 0:
        return []
    flt = RecallFilter(include_superseded=include_superseded or only_superseded)
    filters = leg_filters(scope, types, flt)
    if only_superseded:
        filters.append({"exists": {"field": "superseded_by"}})
    window = {
        op: moment.isoformat()
        for op, moment in (("gte", created_from), ("lte", created_to))
        if moment is not None
    }
    if window:
        filters.append({"range": {"created_at.nanos": window}})
    body: Json = {
        "size": limit,
        "track_total_hits": False,
        "query": {"bool": {"filter": filters}},
        # created_at.nanos keeps the microseconds the key carries (date is milliseconds).
        "sort": [
            {"created_at.nanos": {"order": "asc", "format": "strict_date_optional_time_nanos"}},
            {"id": "asc"},
        ],
        **NO_VECTORS,
    }
    if search_after is not None:
        body["search_after"] = list(search_after)
    indices = conn.scope_indices(scope)
    if include_superseded or only_superseded:
        indices += scope_archives(conn, scope)
    hits = conn.search(scope, scope_routing(scope), body, indices=indices)["hits"]["hits"]
    return [MemoryDoc.from_source(h["_source"]) for h in hits]


def newest_timestamp(conn: Connection, scope: ReadScope) -> datetime | None:
    body: Json = {
        "size": 0,
        "query": {
            "bool": {
                "filter": [
                    *scope_filter(scope),
                    {"terms": {"memory_type": ["episodic", "semantic"]}},
                ]
            }
        },
        "aggs": {"newest": {"max": {"field": "timestamp"}}},
    }
    response = conn.search(scope, scope_routing(scope), body)
    # No index yet for the scope (a tenant that never wrote): no aggregations in the answer.
    value = response.get("aggregations", {}).get("newest", {}).get("value_as_string")
    return _instant(value) if value else None


def session_neighbours(
    conn: Connection,
    scope: ReadScope,
    turns: list[SessionTurn],
    *,
    depth: int,
    since: datetime | None,
    until: datetime | None,
) -> dict[str, Neighbours]:
    """One search: every turn of the turns' sessions (up to ``SESSION_READ_CAP``; a
    conversation's sessions are short). Only turns of a session that did not fit are read one
    by one (an msearch of two bounded searches per turn)."""
    if scope.user_id is None or not turns or depth < 1:
        return {}
    mine: list[Json] = [
        {"term": {"tenant_id": scope.tenant_id}},
        {"term": {"user_id": scope.user_id}},
        {"term": {"memory_type": "episodic"}},
    ]
    # An explicit range is a filter of its own: one range may not hold both "lt" and "lte".
    explicit = {
        bound: moment.isoformat() for bound, moment in (("gte", since), ("lte", until)) if moment
    }
    bounds: list[Json] = [{"range": {"timestamp": explicit}}] if explicit else []
    sessions = sorted({turn.session_id for turn in turns})
    whole = _session_turns(
        conn, scope, [*mine, {"terms": {"session_id": sessions}}, *bounds], size=SESSION_READ_CAP
    )
    by_session: dict[str, list[tuple[datetime, str]]] = {}
    for memory_id, session, at in whole:
        by_session.setdefault(session, []).append((at, memory_id))
    # Sorted by session, so only the last session read can have been cut short.
    complete = set(by_session) - ({whole[-1][1]} if len(whole) >= SESSION_READ_CAP else set())
    found: dict[str, Neighbours] = {}
    rest = []
    for turn in turns:
        if turn.session_id not in complete:
            rest.append(turn)
            continue
        listed = by_session[turn.session_id]
        at = turn.timestamp
        found[turn.id] = Neighbours(
            before=tuple(i for when, i in reversed(listed) if when < at)[:depth],
            after=tuple(i for when, i in listed if when > at)[:depth],
        )
    if rest:
        found.update(_neighbours_one_by_one(conn, scope, rest, mine, bounds, depth))
    return found


# A session with more turns than this (an agent's long log) has its head turns' neighbours
# read one by one instead.
SESSION_READ_CAP = 1000
_SESSION_ORDER = ("timestamp", "created_at.nanos", "id")


def _session_turns(
    conn: Connection, scope: ReadScope, filters: list[Json], *, size: int
) -> list[tuple[str, str, datetime]]:
    """(id, session id, timestamp) of the episodes ``filters`` match, by session then time."""
    body: Json = {
        "size": size,
        "track_total_hits": False,
        "_source": False,
        "stored_fields": "_none_",  # doc values only: half the time of reading each hit's _id
        "docvalue_fields": ["id", "session_id", TIMESTAMP_VALUE],
        "query": {"bool": {"filter": filters}},
        "sort": [{"session_id": "asc"}, *({key: "asc"} for key in _SESSION_ORDER)],
    }
    hits = conn.search(scope, scope_routing(scope), body)["hits"]["hits"]
    return [
        (h["fields"]["id"][0], h["fields"]["session_id"][0], _instant(h["fields"]["timestamp"][0]))
        for h in hits
    ]


def _neighbours_one_by_one(
    conn: Connection,
    scope: ReadScope,
    turns: list[SessionTurn],
    mine: list[Json],
    bounds: list[Json],
    depth: int,
) -> dict[str, Neighbours]:
    header: Json = {
        "index": conn.scope_indices(scope),
        "routing": scope_routing(scope),
        "ignore_unavailable": True,
    }
    searches: list[Json] = []
    for turn in turns:
        for op, order in (("lt", "desc"), ("gt", "asc")):
            around: Json = {
                "size": depth,
                "track_total_hits": False,
                "_source": False,
                "stored_fields": "_none_",
                "docvalue_fields": ["id"],
                "query": {
                    "bool": {
                        "filter": [
                            *mine,
                            {"term": {"session_id": turn.session_id}},
                            {"range": {"timestamp": {op: turn.timestamp.isoformat()}}},
                            *bounds,
                        ]
                    }
                },
                "sort": [{key: order} for key in _SESSION_ORDER],
            }
            searches.extend((header, around))
    response = conn.read(
        scope, "session neighbours", lambda client: client.msearch(searches=searches)
    )
    answers = response["responses"]
    found: dict[str, Neighbours] = {}
    for n, turn in enumerate(turns):
        sides = []
        for answer in answers[2 * n : 2 * n + 2]:
            if "error" in answer:
                raise EngineError(f"Elasticsearch failed a session read: {answer['error']}")
            sides.append(tuple(h["fields"]["id"][0] for h in answer["hits"]["hits"]))
        found[turn.id] = Neighbours(before=sides[0], after=sides[1])
    return found


def count(conn: Connection, scope: ReadScope) -> dict[str, int]:
    body: Json = {
        "size": 0,
        "query": {"bool": {"filter": scope_filter(scope)}},
        "aggs": {"types": {"terms": {"field": "memory_type", "size": len(MEMORY_TYPES)}}},
    }
    indices = conn.scope_indices(scope) + scope_archives(conn, scope)
    response = conn.search(scope, scope_routing(scope), body, indices=indices)
    counts: dict[str, int] = dict.fromkeys(MEMORY_TYPES, 0)
    counts.update(
        {
            b["key"]: int(b["doc_count"])
            for b in response.get("aggregations", {}).get("types", {}).get("buckets", [])
        }
    )
    return counts
