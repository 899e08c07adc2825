"""The queries the backend sends: scope filters and routing, the recall legs' bodies with the
ranking signals (``base.signal_multiplier`` as ``function_score``), one user's documents."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from memory.engine.types import LegQuery, MemoryDoc, MemoryType, Ranking, ReadScope, RecallFilter
from memory.query import lexical_terms

Json = dict[str, Any]
LEXICAL_FIELDS = ["text", "text.exact", "name^0.5", "description^0.3", "trigger^0.5"]
MS_PER_DAY = 86_400_000
MAX_KNN_CANDIDATES = 10_000
# Recall's legs return ids only (from doc values: no stored fields are read, no _source is
# parsed to drop its vector); fusion needs nothing more, and recall then reads just the
# documents it returns (``get_many``). Reading 80 full hits per leg cost about a third of the
# cluster's CPU per recall (docs/performance.md).
# A leg's hits carry ids only, and for a superseded fact (legs that include them) the id of the
# fact that replaced it: recall credits the successor with the match (memory.fusion); for a
# turn, its session and time, which recall's session spread reads its neighbours by.
TIMESTAMP_VALUE: Json = {"field": "timestamp", "format": "strict_date_optional_time"}
LEG_FIELDS: Json = {
    "_source": False,
    "stored_fields": "_none_",
    "docvalue_fields": ["id", "superseded_by", "session_id", TIMESTAMP_VALUE],
}
# Reads leave the embedding out of ``_source``: nobody reads it back, and 384 floats per hit
# were most of a response's bytes.
NO_VECTORS: Json = {"_source": {"excludes": ["embedding"]}}


def routing(doc: MemoryDoc) -> str:
    return doc.user_id if doc.user_id is not None else f"tenant:{doc.tenant_id}"


def scope_routing(scope: ReadScope) -> str:
    """Only the shards that can hold the scope's documents: the user's and the catalog's."""
    catalog = f"tenant:{scope.tenant_id}"
    return catalog if scope.user_id is None else f"{scope.user_id},{catalog}"


def scope_filter(scope: ReadScope) -> list[Json]:
    no_user: Json = {"bool": {"must_not": [{"exists": {"field": "user_id"}}]}}
    if scope.user_id is None:
        return [{"term": {"tenant_id": scope.tenant_id}}, no_user]
    mine = {"term": {"user_id": scope.user_id}}
    owner = {"bool": {"should": [mine, no_user], "minimum_should_match": 1}}
    return [{"term": {"tenant_id": scope.tenant_id}}, owner]


def user_query(tenant_id: str, user_id: str, memory_type: str, among: list[str] | None) -> Json:
    """One user's own documents of one type (among ``among`` when given): never the catalog."""
    filters: list[Json] = [
        {"term": {"tenant_id": tenant_id}},
        {"term": {"user_id": user_id}},
        {"term": {"memory_type": memory_type}},
    ]
    if among is not None:
        filters.append({"ids": {"values": among}})
    return {"bool": {"filter": filters}}


def previous_turn_body(tenant_id: str, user_id: str, session_id: str, before: datetime) -> Json:
    """The newest of the user's episodes of one session at or before ``before``."""
    filters: list[Json] = [
        {"term": {"tenant_id": tenant_id}},
        {"term": {"user_id": user_id}},
        {"term": {"memory_type": "episodic"}},
        {"term": {"session_id": session_id}},
        {"range": {"timestamp": {"lte": before.isoformat()}}},
    ]
    return {
        "size": 1,
        "track_total_hits": False,
        "query": {"bool": {"filter": filters}},
        "sort": [{"timestamp": "desc"}, {"created_at.nanos": "desc"}, {"id": "desc"}],
        **NO_VECTORS,
    }


def context_holders_query(tenant_id: str, user_id: str, ids: list[str]) -> Json:
    """The user's turns whose lexical context came from one of ``ids``."""
    filters: list[Json] = [
        {"term": {"tenant_id": tenant_id}},
        {"term": {"user_id": user_id}},
        {"terms": {"context_ids": ids}},
    ]
    return {"bool": {"filter": filters}}


def recall_types(scope: ReadScope, flt: RecallFilter) -> tuple[MemoryType, ...]:
    """Personal types from the filter (none for a catalog-only scope), then the catalog."""
    personal = () if scope.user_id is None else tuple(t for t in flt.memory_types if t != "catalog")
    catalog: tuple[MemoryType, ...] = ("catalog",) if flt.include_catalog else ()
    return tuple(dict.fromkeys(personal + catalog))


def leg_filters(scope: ReadScope, types: tuple[MemoryType, ...], flt: RecallFilter) -> list[Json]:
    filters = [*scope_filter(scope), {"terms": {"memory_type": list(types)}}]
    if not flt.include_superseded:
        filters.append({"bool": {"must_not": [{"exists": {"field": "superseded_by"}}]}})
    window = {
        op: moment.isoformat()
        for op, moment in (("gte", flt.since), ("lte", flt.until))
        if moment is not None
    }
    if window:
        filters.append({"range": {"timestamp": window}})
    if flt.ids is not None:
        filters.append({"ids": {"values": list(flt.ids)}})
    if flt.project is not None:
        filters.append(project_filter(flt.project, include_unscoped=flt.include_unscoped))
    return filters


def project_filter(project: str, *, include_unscoped: bool) -> Json:
    """Personal memories of ``project`` (and, with ``include_unscoped``, of no project); the
    catalog passes."""
    should: list[Json] = [{"term": {"project": project}}, {"term": {"memory_type": "catalog"}}]
    if include_unscoped:
        should.append({"bool": {"must_not": [{"exists": {"field": "project"}}]}})
    return {"bool": {"should": should, "minimum_should_match": 1}}


def _signals(query: Json, ranking: Ranking, now: datetime) -> Json:
    """Wrap a leg's query so its score is multiplied by ``base.signal_multiplier``."""
    semantic: Json = {"term": {"memory_type": "semantic"}}
    # Inner: 1 + w * log10(1 + use_count) for semantic documents ("sum" of the two functions).
    use_boost: list[Json] = [{"filter": semantic, "weight": 1}]
    if ranking.use_count_weight:
        use_boost.append(
            {
                "filter": semantic,
                "field_value_factor": {"field": "use_count", "modifier": "log1p", "missing": 0},
                "weight": ranking.use_count_weight,
            }
        )
    boosted = {
        "function_score": {
            "query": query,
            "functions": use_boost,
            "score_mode": "sum",
            "boost_mode": "multiply",
        }
    }
    functions: list[Json] = [
        {"filter": {"term": {"memory_type": "catalog"}}, "weight": ranking.catalog_prior}
    ]
    if ranking.apply_decay:
        used = {"exists": {"field": "last_used_at"}}
        functions += [
            _decay("timestamp", {"terms": {"memory_type": ["episodic", "entity"]}}, ranking, now),
            _decay("last_used_at", {"bool": {"filter": [semantic, used]}}, ranking, now),
            # Never used: the semantic fact ages from its creation.
            _decay(
                "created_at",
                {"bool": {"filter": [semantic], "must_not": [used]}},
                ranking,
                now,
            ),
        ]
    return {
        "function_score": {
            "query": boosted,
            "functions": functions,
            "score_mode": "multiply",
            "boost_mode": "multiply",
        }
    }


def _decay(field: str, only: Json, ranking: Ranking, now: datetime) -> Json:
    # Milliseconds, because the ranking's day counts may be fractional.
    offset = round(ranking.decay_offset_days * MS_PER_DAY)
    scale = round(ranking.decay_scale_days * MS_PER_DAY)
    params = {
        "origin": now.isoformat(),
        "offset": f"{offset}ms",
        "scale": f"{scale}ms",
        "decay": ranking.decay,
    }
    return {"filter": only, "gauss": {field: params}}


def lexical_body(query: LegQuery, filters: list[Json]) -> Json:
    # The same terms as the embedded backend searches: the analyzer's stop list misses
    # question words ("what", "did", "how", "we"), which otherwise match half the memories.
    terms = " ".join(lexical_terms(query.text))
    fields = list(LEXICAL_FIELDS)
    if query.context_boost > 0:  # a turn's lexical context, below its own words
        fields.append(f"context^{query.context_boost:g}")
    match = {"multi_match": {"query": terms, "fields": fields, "type": "most_fields"}}
    scored = _signals({"bool": {"must": [match], "filter": filters}}, query.ranking, query.now)
    return {"size": query.size, "track_total_hits": False, **LEG_FIELDS, "query": scored}


def dense_body(query: LegQuery, vector: list[float], filters: list[Json]) -> Json:
    # k above size: the signals re-order the nearest neighbours, so keep a wider pool to pick
    # the top ``size`` from. The filter inside knn makes it a pre-filter (exact k in scope).
    k = min(MAX_KNN_CANDIDATES, max(100, 2 * query.size))
    knn = {
        "knn": {
            "field": "embedding",
            "query_vector": vector,
            "k": k,
            "num_candidates": k,
            "filter": filters,
        }
    }
    return {
        "size": query.size,
        "track_total_hits": False,
        **LEG_FIELDS,
        "query": _signals(knn, query.ranking, query.now),
    }
