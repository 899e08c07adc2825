"""The Elasticsearch backend: one index for every memory type (``<prefix>-memories``) plus
``<prefix>-archive``, shared by tenants, routed by user.

One index, not one per type: a recall touches one shard per leg instead of four, and with the
legs returning ids only, the per-shard work (security checks, query and fetch phases) was most of
the cluster's CPU per recall (docs/performance.md). The type is a keyword field every query
filters on. ``manage.py es_layout_migrate`` moves a deployment from the older per-type indices.

Uses only core features (BM25, dense_vector + ``knn`` query, ``function_score``, ``_msearch``,
optimistic concurrency) so it runs on the integ-test distribution and on any licence. Mappings
and settings live in ``deploy/elasticsearch/templates``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import random
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from elasticsearch import (
    ApiError,
    AuthenticationException,
    ConflictError,
    Elasticsearch,
    NotFoundError,
    TransportError,
    helpers,
)

from atlas_platform.cluster import Cluster, ClusterConfig
from memory.engine.base import Conflict, EngineError, MemoryBackend, usage_changes
from memory.engine.elasticsearch.refresh import GroupRefresh
from memory.engine.types import (
    MEMORY_TYPES,
    PERSONAL_TYPES,
    GrowthBucket,
    GrowthPoint,
    LegHit,
    LegQuery,
    LegResults,
    MemoryDoc,
    MemoryType,
    Ranking,
    ReadScope,
    RecallFilter,
    UsageBump,
)
from memory.query import lexical_terms

Json = dict[str, Any]
T = TypeVar("T")
logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class LayoutMove:
    index: str  # the old per-type index
    documents: int  # how many it held (all now in the shared index)
    copied: int  # how many this run copied (the rest were there already)
    deleted: bool


TEMPLATES_DIR = Path(__file__).resolve().parents[3] / "deploy" / "elasticsearch" / "templates"
SHARED_INDEX = "memories"  # every memory type
# The per-type indices of the layout before 2026-11-30 (migrate_per_type_indices).
OLD_LAYOUT_KINDS = MEMORY_TYPES
ARCHIVE_INDEX = "archive"
INDEX_NAMES = (SHARED_INDEX, ARCHIVE_INDEX)
# What a user's documents are erased from, one kind at a time: their personal types in the
# shared index (the catalog holds none of theirs), then the archive.
ERASURE_KINDS = (*PERSONAL_TYPES, ARCHIVE_INDEX)
LEXICAL_FIELDS = ["text", "text.exact", "name^0.5", "description^0.3", "trigger^0.5"]
UPDATE_RETRIES = 20
MS_PER_DAY = 86_400_000
MAX_KNN_CANDIDATES = 10_000
READER_CACHE_SIZE = 1024  # scoped-key clients kept, most recently used (one costs ~1 ms)

# Writes index without refreshing, then wait for a shared refresh (memory.engine.refresh), so
# the very next recall sees them without waiting for the periodic refresh (``wait_for`` would
# add up to a second per write) and concurrent writers pay for one refresh, not one each.
_NO_REFRESH = "false"
# Recall's legs return ids only (from doc values: no stored fields are read, no _source is
# parsed to drop its vector); fusion needs nothing more, and recall then reads just the
# documents it returns (``get_many``). Reading 80 full hits per leg cost about a third of the
# cluster's CPU per recall (docs/performance.md).
# A leg's hits carry ids only, and for a superseded fact (legs that include them) the id of the
# fact that replaced it: recall credits the successor with the match (memory.fusion).
_LEG_FIELDS: Json = {
    "_source": False,
    "stored_fields": "_none_",
    "docvalue_fields": ["id", "superseded_by"],
}


class ElasticsearchBackend(MemoryBackend):
    name = "elasticsearch"

    def __init__(self, *, config: ClusterConfig, dims: int) -> None:
        self.config = config
        self.dims = dims
        self._writer = Cluster(config).client
        # Clients bound to users' scoped keys, kept per key (id and secret: a rotated key gets a
        # new one) so a request does not rebuild a client's ~90 namespace objects. options()
        # shares the writer's connection pool; only the auth header differs.
        self._reader_for = functools.lru_cache(maxsize=READER_CACHE_SIZE)(self._with_key)
        self._refreshes = GroupRefresh(self._refresh_index)

    # --- setup ---------------------------------------------------------------------------------
    def ensure_ready(self) -> None:
        prefix = self.config.index_prefix
        component = _load_template("memory-component.json", prefix, self.dims)
        template = _load_template("memory-index.json", prefix, self.dims)
        w = self._writer
        _call(
            "put the component template",
            lambda: w.cluster.put_component_template(name=f"{prefix}-memory", body=component),
        )
        _call(
            "put the index template",
            lambda: w.indices.put_index_template(name=f"{prefix}-memory", body=template),
        )
        for name in INDEX_NAMES:
            try:
                w.indices.create(index=f"{prefix}-{name}")
            except ApiError as exc:
                # Another process may have won the race; that is the outcome we wanted.
                if exc.error != "resource_already_exists_exception":
                    raise EngineError(f"Elasticsearch could not create an index: {exc}") from exc
            except TransportError as exc:
                raise EngineError(f"Elasticsearch could not create an index: {exc}") from exc
        old = self.old_layout_indices()
        if old:
            logger.warning(
                "Memories are still in the per-type indices %s, which recall no longer reads: "
                "run `python manage.py es_layout_migrate` (deploy/README.md).",
                ", ".join(old),
            )

    def old_layout_indices(self) -> list[str]:
        """The per-type indices of the layout before 2026-11-30 that still exist."""
        names = ",".join(f"{self.config.index_prefix}-{kind}" for kind in OLD_LAYOUT_KINDS)
        found = _call(
            "list indices",
            lambda: self._writer.indices.get(
                index=names, ignore_unavailable=True, allow_no_indices=True
            ),
        )
        return sorted(found.body)

    def migrate_per_type_indices(self, *, delete_old: bool = False) -> list[LayoutMove]:
        """Copy the documents of the older per-type indices (``<prefix>-episodic``,
        ``-semantic``, ``-procedural``, ``-catalog``) into the shared index, each with its
        routing. A document already there is left as it is (``create``: a re-run after an
        interruption copies only what is missing, and never overwrites a newer version written
        since). Every old document is then checked by id in the shared index; only then, and
        only with ``delete_old``, is the old index deleted."""
        self.ensure_ready()
        prefix = self.config.index_prefix
        moves = []
        for kind in OLD_LAYOUT_KINDS:
            move = self._move_index(f"{prefix}-{kind}", f"{prefix}-{SHARED_INDEX}", delete_old)
            if move is not None:
                moves.append(move)
        return moves

    def _move_index(self, old: str, target: str, delete_old: bool) -> LayoutMove | None:
        w = self._writer
        if not _call("check an index", lambda: w.indices.exists(index=old)):
            return None
        ids: list[str] = []

        def copies() -> Iterable[Json]:
            for hit in helpers.scan(w, index=old, query={"query": {"match_all": {}}}):
                ids.append(hit["_id"])
                yield {
                    "_op_type": "create",
                    "_index": target,
                    "_id": hit["_id"],
                    "routing": hit.get("_routing"),
                    "_source": hit["_source"],
                }

        copied = 0
        try:
            for ok, item in helpers.streaming_bulk(
                w, copies(), chunk_size=500, raise_on_error=False, max_retries=0
            ):
                if ok:
                    copied += 1
                elif item["create"].get("status") != 409:  # 409: already there
                    raise EngineError(f"Elasticsearch refused to copy into {target}: {item}")
        except (ApiError, TransportError) as exc:
            raise EngineError(f"Elasticsearch could not copy {old}: {exc}") from exc
        _call("refresh", lambda: w.indices.refresh(index=target))
        present = sum(self._count_ids(target, ids[i : i + 1000]) for i in range(0, len(ids), 1000))
        if present != len(ids):
            raise EngineError(
                f"{old}: {len(ids) - present} of {len(ids)} documents are not in {target}; "
                "nothing was deleted."
            )
        if delete_old:
            _call("delete an index", lambda: w.indices.delete(index=old))
        return LayoutMove(index=old, documents=len(ids), copied=copied, deleted=delete_old)

    def _count_ids(self, index: str, ids: list[str]) -> int:
        query = {"ids": {"values": ids}}
        return int(_call("count", lambda: self._writer.count(index=index, query=query))["count"])

    # --- writes (always the writer credential) -------------------------------------------------
    def write(self, docs: list[MemoryDoc]) -> None:
        if not docs:
            return
        operations: list[Json] = []
        for doc in docs:
            meta = {"_index": self._index(doc.memory_type), "_id": doc.id, "routing": _routing(doc)}
            operations += [{"index": meta}, doc.to_source()]
        response = _call(
            "write documents",
            lambda: self._writer.bulk(operations=operations, refresh=_NO_REFRESH),
        )
        self._refreshes.after_write(op["index"]["_index"] for op in operations[::2])
        if response.get("errors"):
            failures = [
                f"{item['index'].get('_id')}: {item['index']['error']}"
                for item in response["items"]
                if "error" in item.get("index", {})
            ]
            raise EngineError(f"Elasticsearch refused {len(failures)} document(s): {failures}")

    def update(self, doc: MemoryDoc, mutate: Callable[[MemoryDoc], dict[str, Any]]) -> MemoryDoc:
        index, routing = self._index(doc.memory_type), _routing(doc)
        for attempt in range(UPDATE_RETRIES):
            current, seq_no, primary_term = self._get_versioned(index, doc.id, routing)
            changes = mutate(current)
            if not changes:
                return current
            updated = dataclasses.replace(current, **changes)
            try:
                self._writer.index(
                    index=index,
                    id=doc.id,
                    routing=routing,
                    document=updated.to_source(),
                    if_seq_no=seq_no,
                    if_primary_term=primary_term,
                    refresh=_NO_REFRESH,
                )
            except ConflictError:
                # Jitter so that writers who lost together do not collide again.
                time.sleep(random.uniform(0, 0.005 * (attempt + 1)))  # noqa: S311
                continue
            except (ApiError, TransportError) as exc:
                raise EngineError(f"Elasticsearch could not update {doc.id}: {exc}") from exc
            self._refreshes.after_write([index])
            return updated
        raise Conflict(f"{doc.id} kept changing under {UPDATE_RETRIES} attempts to update it")

    def record_usage(self, bumps: list[UsageBump], *, refresh: bool = True) -> int:
        """One ``mget`` and one conditional ``bulk`` for the whole batch (no scripts on this
        cluster); the few that lose a race to another writer go through ``update``."""
        if not bumps:
            return 0
        refs = [
            {"_index": self._index(b.doc.memory_type), "_id": b.doc.id, "routing": _routing(b.doc)}
            for b in bumps
        ]
        found = _call("read usage", lambda: self._writer.mget(docs=refs))["docs"]
        operations: list[Json] = []
        batch: list[UsageBump] = []
        for bump, ref, got in zip(bumps, refs, found, strict=True):
            if not got.get("found"):
                continue  # forgotten since it was recalled
            current = _doc(got["_source"])
            updated = dataclasses.replace(current, **usage_changes(current, bump))
            condition = {"if_seq_no": got["_seq_no"], "if_primary_term": got["_primary_term"]}
            operations += [{"index": {**ref, **condition}}, updated.to_source()]
            batch.append(bump)
        if not operations:
            return 0
        response = _call(
            "record usage",
            lambda: self._writer.bulk(operations=operations, refresh=_NO_REFRESH),
        )
        if refresh:
            self._refreshes.after_write(op["index"]["_index"] for op in operations[::2])
        changed = 0
        for bump, item in zip(batch, response["items"], strict=True):
            status = item["index"].get("status", 500)
            if status < 300:
                changed += 1
            elif status == 409:
                changed += super().record_usage([bump], refresh=refresh)
        return changed

    def delete(self, doc: MemoryDoc) -> bool:
        try:
            self._writer.delete(
                index=self._index(doc.memory_type),
                id=doc.id,
                routing=_routing(doc),
                refresh=_NO_REFRESH,
            )
        except NotFoundError as exc:
            if _error_body(exc).get("result") == "not_found":
                return False
            raise EngineError(f"Elasticsearch could not delete {doc.id}: {exc}") from exc
        except (ApiError, TransportError) as exc:
            raise EngineError(f"Elasticsearch could not delete {doc.id}: {exc}") from exc
        self._refreshes.after_write([self._index(doc.memory_type)])
        return True

    # --- reads (scope filters always; the user's key under dls) --------------------------------
    def get(self, scope: ReadScope, memory_id: str) -> MemoryDoc | None:
        found = self.get_many(scope, [memory_id])
        return found[0] if found else None

    def get_many(
        self, scope: ReadScope, memory_ids: list[str], *, vectors: bool = True
    ) -> list[MemoryDoc]:
        if not memory_ids:
            return []
        body: Json = {
            "size": len(set(memory_ids)),
            "query": {"bool": {"filter": [{"ids": {"values": memory_ids}}, *_scope_filter(scope)]}},
        }
        if not vectors:
            body["_source"] = {"excludes": ["embedding"]}
        hits = self._search(scope, MEMORY_TYPES, body)["hits"]["hits"]
        by_id = {doc.id: doc for doc in (_doc(h["_source"]) for h in hits)}
        return [by_id[i] for i in memory_ids if i in by_id]

    def recall_legs(self, scope: ReadScope, query: LegQuery) -> LegResults:
        types = _recall_types(scope, query.filter)
        header: Json = {"index": self._indices(types), "routing": _scope_routing(scope)}
        filters = _filters(scope, types, query.filter)
        legs: list[tuple[str, Json, Json]] = []
        if types and query.lexical and query.text.strip():
            # DFS shares term statistics across shards: a user's documents and the catalog are
            # routed apart, and their BM25 scores must be comparable (the catalog prior is a
            # ratio of them).
            dfs = {**header, "search_type": "dfs_query_then_fetch"}
            legs.append(("lexical", dfs, _lexical_body(query, filters)))
        if types and query.dense and query.vector is not None:
            legs.append(("dense", header, _dense_body(query, query.vector, filters)))
        results = LegResults()
        if not legs:
            return results
        searches = [part for _, head, body in legs for part in (head, body)]
        started = time.perf_counter()
        response = self._read(
            scope,
            "recall",
            lambda client: client.msearch(searches=searches, max_concurrent_searches=len(legs)),
        )
        results.took_ms = (time.perf_counter() - started) * 1000.0
        for (leg, _, _), answer in zip(legs, response["responses"], strict=True):
            if "error" in answer:
                raise EngineError(f"Elasticsearch failed the {leg} leg: {answer['error']}")
            hits = [
                LegHit(
                    id=h["fields"]["id"][0],
                    score=float(h["_score"]),
                    rank=n,
                    superseded_by=(h["fields"].get("superseded_by") or [None])[0],
                )
                for n, h in enumerate(answer["hits"]["hits"], start=1)
            ]
            setattr(results, leg, hits)
        return results

    def scan(
        self,
        scope: ReadScope,
        *,
        memory_types: tuple[MemoryType, ...],
        include_superseded: bool = True,
        search_after: tuple[str, str] | None = None,
        limit: int = 500,
        only_superseded: bool = False,
        created_from: datetime | None = None,
        created_to: datetime | None = None,
    ) -> list[MemoryDoc]:
        types = tuple(dict.fromkeys(memory_types))
        if not types or limit <= 0:
            return []
        flt = RecallFilter(include_superseded=include_superseded or only_superseded)
        filters = _filters(scope, types, flt)
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
        }
        if search_after is not None:
            body["search_after"] = list(search_after)
        return [_doc(h["_source"]) for h in self._search(scope, types, body)["hits"]["hits"]]

    def count(self, scope: ReadScope) -> dict[str, int]:
        body: Json = {
            "size": 0,
            "query": {"bool": {"filter": _scope_filter(scope)}},
            "aggs": {"types": {"terms": {"field": "memory_type", "size": len(MEMORY_TYPES)}}},
        }
        buckets = self._search(scope, MEMORY_TYPES, body)["aggregations"]["types"]["buckets"]
        counts: dict[str, int] = dict.fromkeys(MEMORY_TYPES, 0)
        counts.update({b["key"]: int(b["doc_count"]) for b in buckets})
        return counts

    def growth(self, tenant_id: str, *, bucket: GrowthBucket) -> list[GrowthPoint]:
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
                    "aggs": {
                        "types": {"terms": {"field": "memory_type", "size": len(MEMORY_TYPES)}}
                    },
                }
            },
        }
        index = self._indices(MEMORY_TYPES)
        response = _call("count growth", lambda: self._writer.search(index=index, **body))
        points = [
            GrowthPoint(
                start=datetime.fromtimestamp(b["key"] / 1000, tz=UTC),
                memory_type=t["key"],
                count=int(t["doc_count"]),
            )
            for b in response["aggregations"]["buckets"]["buckets"]
            for t in b["types"]["buckets"]
        ]
        return sorted(points, key=lambda p: (p.start, p.memory_type))

    # --- erasure (the writer credential; no delete-by-query: search, then bulk delete) --------
    def erasure_kinds(self) -> tuple[str, ...]:
        return ERASURE_KINDS

    def erasure_find(
        self,
        *,
        tenant_id: str,
        user_id: str,
        kind: str,
        ids: list[str] | None = None,
        limit: int = 500,
    ) -> list[str]:
        if limit <= 0 or ids == []:
            return []
        return [hit["_id"] for hit in self._erasure_hits(tenant_id, user_id, kind, ids, limit)]

    def erasure_delete(
        self, *, tenant_id: str, user_id: str, kind: str, ids: list[str]
    ) -> list[str]:
        if not ids:
            return []
        # Only the user's own documents, with the routing each was stored under.
        hits = self._erasure_hits(tenant_id, user_id, kind, ids, len(set(ids)))
        if not hits:
            return []
        index = self._index(kind)
        operations: list[Json] = [
            {"delete": {"_index": index, "_id": h["_id"], "routing": h.get("_routing")}}
            for h in hits
        ]
        response = _call(
            "delete documents",
            lambda: self._writer.bulk(operations=operations, refresh=_NO_REFRESH),
        )
        self._refreshes.after_write([index])
        deleted, failures = [], []
        for item in response["items"]:
            outcome = item["delete"]
            if outcome.get("result") == "deleted":
                deleted.append(outcome["_id"])
            elif outcome.get("result") != "not_found":
                failures.append(f"{outcome.get('_id')}: {outcome.get('error')}")
        if failures:
            raise EngineError(f"Elasticsearch refused to delete {len(failures)}: {failures}")
        return deleted

    def erasure_count(
        self, *, tenant_id: str, user_id: str, kind: str, ids: list[str] | None = None
    ) -> int:
        if ids == []:
            return 0
        query = _erasure_query(tenant_id, user_id, ids, kind)
        index = self._erasure_index(kind)
        response = _call("count documents", lambda: self._writer.count(index=index, query=query))
        return int(response["count"])

    def _erasure_index(self, kind: str) -> str:
        if kind not in ERASURE_KINDS:
            raise EngineError(f"No erasable index {kind!r}.")
        return self._index(kind)

    def _erasure_hits(
        self, tenant_id: str, user_id: str, kind: str, ids: list[str] | None, limit: int
    ) -> list[Json]:
        index = self._erasure_index(kind)
        body: Json = {
            "size": limit,
            "_source": False,
            "track_total_hits": False,
            "query": _erasure_query(tenant_id, user_id, ids, kind),
            "sort": [{"id": "asc"}],
        }
        # No routing: a document stored under another routing (an archive) is found as well.
        response = _call("search", lambda: self._writer.search(index=index, **body))
        hits: list[Json] = response["hits"]["hits"]
        return hits

    # --- helpers -------------------------------------------------------------------------------
    def _index(self, kind: str) -> str:
        """The index holding documents of ``kind`` (a memory type, or ``archive``)."""
        if kind == ARCHIVE_INDEX:
            return f"{self.config.index_prefix}-{ARCHIVE_INDEX}"
        if kind in MEMORY_TYPES:
            return f"{self.config.index_prefix}-{SHARED_INDEX}"
        raise EngineError(f"No index for {kind!r}.")

    def _refresh_index(self, index: str) -> None:
        # The whole index, where ``refresh=true`` on a write touched only the written shards: a
        # shard with nothing new skips its refresh, so more shards cost little.
        shards = _call("refresh", lambda: self._writer.indices.refresh(index=index))["_shards"]
        if shards.get("failed"):
            raise EngineError(f"Elasticsearch could not refresh {index}: {shards}")

    def _indices(self, types: Iterable[str]) -> list[str]:
        return list(dict.fromkeys(self._index(t) for t in types))

    def _reader(self, scope: ReadScope) -> Elasticsearch:
        if scope.isolation != "dls":
            return self._writer
        if scope.credentials is None:
            raise EngineError("A dls read scope needs the user's API key credentials.")
        client: Elasticsearch = self._reader_for(scope.credentials.id, scope.credentials.secret)
        return client

    def _with_key(self, key_id: str, secret: str) -> Elasticsearch:
        return self._writer.options(api_key=(key_id, secret))

    def _read(self, scope: ReadScope, what: str, call: Callable[[Elasticsearch], T]) -> T:
        """Run a read as the scope's credential. A key the cluster does not know (401: rotated
        or invalidated since the scope kept it) is renewed from the database once; a user left
        without a live key is refused by ``renew``, and a second refusal fails the read."""
        try:
            return call(self._reader(scope))
        except AuthenticationException as exc:
            renewed = scope.renewed()
            if renewed is None:
                raise EngineError(f"Elasticsearch could not {what}: {exc}") from exc
            return _call(what, lambda: call(self._reader(renewed)))
        except (ApiError, TransportError) as exc:
            raise EngineError(f"Elasticsearch could not {what}: {exc}") from exc

    def _search(self, scope: ReadScope, types: Iterable[str], body: Json) -> Json:
        index, routing = self._indices(types), _scope_routing(scope)
        response = self._read(
            scope, "search", lambda client: client.search(index=index, routing=routing, **body)
        )
        result: Json = response.body
        return result

    def _get_versioned(
        self, index: str, memory_id: str, routing: str
    ) -> tuple[MemoryDoc, int, int]:
        try:
            got = self._writer.get(index=index, id=memory_id, routing=routing)
        except NotFoundError as exc:
            raise EngineError(f"Memory {memory_id} is gone.") from exc
        except (ApiError, TransportError) as exc:
            raise EngineError(f"Elasticsearch could not read {memory_id}: {exc}") from exc
        return _doc(got["_source"]), got["_seq_no"], got["_primary_term"]


# --- query building ----------------------------------------------------------------------------
def _routing(doc: MemoryDoc) -> str:
    return doc.user_id if doc.user_id is not None else f"tenant:{doc.tenant_id}"


def _scope_routing(scope: ReadScope) -> str:
    """Only the shards that can hold the scope's documents: the user's and the catalog's."""
    catalog = f"tenant:{scope.tenant_id}"
    return catalog if scope.user_id is None else f"{scope.user_id},{catalog}"


def _scope_filter(scope: ReadScope) -> list[Json]:
    no_user: Json = {"bool": {"must_not": [{"exists": {"field": "user_id"}}]}}
    if scope.user_id is None:
        return [{"term": {"tenant_id": scope.tenant_id}}, no_user]
    mine = {"term": {"user_id": scope.user_id}}
    owner = {"bool": {"should": [mine, no_user], "minimum_should_match": 1}}
    return [{"term": {"tenant_id": scope.tenant_id}}, owner]


def _erasure_query(tenant_id: str, user_id: str, ids: list[str] | None, kind: str) -> Json:
    filters: list[Json] = [
        {"term": {"tenant_id": tenant_id}},
        {"term": {"user_id": user_id}},
    ]
    if kind != ARCHIVE_INDEX:  # the shared index holds every type: one kind at a time
        filters.append({"term": {"memory_type": kind}})
    if ids is not None:
        filters.append({"ids": {"values": ids}})
    return {"bool": {"filter": filters}}


def _recall_types(scope: ReadScope, flt: RecallFilter) -> tuple[MemoryType, ...]:
    """Personal types from the filter (none for a catalog-only scope), then the catalog."""
    personal = () if scope.user_id is None else tuple(t for t in flt.memory_types if t != "catalog")
    catalog: tuple[MemoryType, ...] = ("catalog",) if flt.include_catalog else ()
    return tuple(dict.fromkeys(personal + catalog))


def _filters(scope: ReadScope, types: tuple[MemoryType, ...], flt: RecallFilter) -> list[Json]:
    filters = [*_scope_filter(scope), {"terms": {"memory_type": list(types)}}]
    if not flt.include_superseded:
        filters.append({"bool": {"must_not": [{"exists": {"field": "superseded_by"}}]}})
    window = {
        op: moment.isoformat()
        for op, moment in (("gte", flt.since), ("lte", flt.until))
        if moment is not None
    }
    if window:
        filters.append({"range": {"timestamp": window}})
    return filters


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
            _decay("timestamp", {"term": {"memory_type": "episodic"}}, ranking, now),
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


def _lexical_body(query: LegQuery, filters: list[Json]) -> Json:
    # The same terms as the embedded backend searches: the analyzer's stop list misses
    # question words ("what", "did", "how", "we"), which otherwise match half the memories.
    terms = " ".join(lexical_terms(query.text))
    match = {"multi_match": {"query": terms, "fields": LEXICAL_FIELDS, "type": "most_fields"}}
    scored = _signals({"bool": {"must": [match], "filter": filters}}, query.ranking, query.now)
    return {"size": query.size, "track_total_hits": False, **_LEG_FIELDS, "query": scored}


def _dense_body(query: LegQuery, vector: list[float], filters: list[Json]) -> Json:
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
        **_LEG_FIELDS,
        "query": _signals(knn, query.ranking, query.now),
    }


# --- plumbing ----------------------------------------------------------------------------------
def _load_template(filename: str, prefix: str, dims: int) -> Json:
    filled: Json = _substitute(json.loads((TEMPLATES_DIR / filename).read_text()), prefix, dims)
    return filled


def _substitute(value: Any, prefix: str, dims: int) -> Any:
    """Fill the placeholders; ``"__DIMS__"`` becomes a number so the files stay valid JSON."""
    if isinstance(value, dict):
        return {k: _substitute(v, prefix, dims) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, prefix, dims) for v in value]
    if value == "__DIMS__":
        return dims
    if isinstance(value, str):
        return value.replace("__PREFIX__", prefix)
    return value


def _doc(source: Json) -> MemoryDoc:
    return MemoryDoc.from_source(source)


def _error_body(exc: ApiError) -> Json:
    return exc.body if isinstance(exc.body, dict) else {}


def _call(what: str, fn: Callable[[], T]) -> T:
    try:
        return fn()
    except (ApiError, TransportError) as exc:
        raise EngineError(f"Elasticsearch could not {what}: {exc}") from exc
