"""The archive indices: superseded facts moved out of the hot index (``MemoryBackend.
archive_superseded``), so recall's indices hold what recall ranks.

Each hot index has one archive index beside it, named ``<hot index>-archive`` (the tenant's,
or under per-user statistics the user's own: the same isolation and term statistics). The
name never collides with a memory index (an id stands in a name without hyphens,
``atlas_platform.cluster._name_part``), and it matches the memory pattern ``<prefix>-t-*``:
the same index template (mappings, the deployment's id), the same snapshots (backup and
restore carry it), the deployment check, the memory totals. A user's scoped key names it
(``tenants.services.scoped_keys``) so that reads of superseded facts run as the user.

Where the cluster has index lifecycle management, an archive index is created under the
``<prefix>-archive`` policy (``atlas_platform.archive_policy``: hot, then warm, then cold;
installed with the administrator's credential by ``manage.py es_platform_role``); where it has
none (the integ-test distribution), the index is created without one.

Moving is copy, refresh, then a conditional delete from the hot index: a fact is readable in
one place at every moment; a hot copy changed meanwhile (a usage bump) stays and its archive
copy is taken back (the next run moves it).
"""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any

from atlas_platform.archive_policy import ilm_available, policy_name
from atlas_platform.cluster import ARCHIVE_SUFFIX
from memory.engine.base import EngineError
from memory.engine.elasticsearch.client import Connection, call
from memory.engine.types import ReadScope

Json = dict[str, Any]
SUFFIX = ARCHIVE_SUFFIX


def archive_index(conn: Connection, tenant_id: str, user_id: str | None) -> str:
    """The archive beside the hot index of this tenant (and user)."""
    return conn.config.archive_index(conn.index_for(tenant_id, user_id))


def is_archive(index: str) -> bool:
    return index.endswith(SUFFIX)


def scope_archives(conn: Connection, scope: ReadScope) -> list[str]:
    """The archive a scope's superseded facts can be in (a catalog scope has none)."""
    return [] if scope.user_id is None else [archive_index(conn, scope.tenant_id, scope.user_id)]


def ensure_index(conn: Connection, index: str) -> None:
    """Create the archive index (from the memory template) if it is not there, under the
    archive policy where the cluster has ILM."""
    writer = conn.writer
    if call("check the archive index", lambda: writer.indices.exists(index=index)):
        return
    settings: Json = {}
    if ilm_available(writer):
        settings["index.lifecycle.name"] = policy_name(conn.config.index_prefix)
    create = functools.partial(writer.options(ignore_status=400).indices.create, index=index)
    response = call("create the archive index", lambda: create(settings=settings or None))
    error = response.body.get("error") if isinstance(response.body, dict) else None
    if error and error.get("type") != "resource_already_exists_exception":
        raise EngineError(f"Elasticsearch refused the archive index {index}: {error}")


def move(
    conn: Connection, *, tenant_id: str, user_id: str, before: datetime, limit: int
) -> list[str]:
    """Move up to ``limit`` of the user's facts superseded before ``before`` to the archive."""
    live = conn.index_for(tenant_id, user_id)
    query = _superseded_query(tenant_id, user_id, "superseded_at", before)
    search = functools.partial(
        conn.writer.search,
        index=live,
        query=query,
        size=max(0, limit),
        sort=[{"id": "asc"}],
        seq_no_primary_term=True,
        ignore_unavailable=True,
        track_total_hits=False,
    )
    hits: list[Json] = call("read superseded facts", search)["hits"]["hits"]
    if not hits:
        return []
    target = archive_index(conn, tenant_id, user_id)
    ensure_index(conn, target)
    copies: list[Json] = []
    for hit in hits:
        copies += [{"index": {"_index": target, "_id": hit["_id"], "routing": user_id}}]
        copies.append(hit["_source"])
    _bulk(conn, copies, "copy superseded facts to the archive")
    conn.after_write([target], now=True)  # readable there before it leaves the hot index
    deletes = [
        {
            "delete": {
                "_index": live,
                "_id": hit["_id"],
                "routing": hit.get("_routing"),
                "if_seq_no": hit["_seq_no"],
                "if_primary_term": hit["_primary_term"],
            }
        }
        for hit in hits
    ]
    response = call(
        "take archived facts out of the hot index",
        lambda: conn.writer.bulk(operations=deletes, refresh="false"),
    )
    moved: list[str] = []
    kept: list[str] = []
    for item in response["items"]:
        outcome = item["delete"]
        (moved if outcome.get("result") in ("deleted", "not_found") else kept).append(
            outcome["_id"]
        )
    if kept:  # changed meanwhile: the hot copy stays, the archive copy goes
        back = [{"delete": {"_index": target, "_id": i, "routing": user_id}} for i in kept]
        _bulk(conn, back, "take back archive copies")
    conn.after_write([live, target], now=True)
    return sorted(moved)


def expire(
    conn: Connection, *, tenant_id: str, user_id: str, before: datetime, limit: int
) -> list[str]:
    """Delete up to ``limit`` of the user's archived facts superseded before ``before``."""
    target = archive_index(conn, tenant_id, user_id)
    search = functools.partial(
        conn.writer.search,
        index=target,
        query=_superseded_query(tenant_id, user_id, "superseded_at", before),
        size=max(0, limit),
        sort=[{"id": "asc"}],
        source=False,
        ignore_unavailable=True,
        track_total_hits=False,
    )
    hits: list[Json] = call("read expired archived facts", search)["hits"]["hits"]
    if not hits:
        return []
    deletes = [{"delete": {"_index": target, "_id": h["_id"], "routing": user_id}} for h in hits]
    response = _bulk(conn, deletes, "delete expired archived facts")
    conn.after_write([target], now=True)
    return sorted(
        item["delete"]["_id"]
        for item in response["items"]
        if item["delete"].get("result") == "deleted"
    )


def count(conn: Connection, *, tenant_id: str, user_id: str, among: list[str] | None) -> int:
    if among == []:
        return 0
    filters: list[Json] = [{"term": {"tenant_id": tenant_id}}, {"term": {"user_id": user_id}}]
    if among is not None:
        filters.append({"ids": {"values": among}})
    target = archive_index(conn, tenant_id, user_id)
    response = call(
        "count archived facts",
        lambda: conn.writer.count(
            index=target, query={"bool": {"filter": filters}}, ignore_unavailable=True
        ),
    )
    return int(response["count"])


def _superseded_query(tenant_id: str, user_id: str, field: str, before: datetime) -> Json:
    return {
        "bool": {
            "filter": [
                {"term": {"tenant_id": tenant_id}},
                {"term": {"user_id": user_id}},
                {"term": {"memory_type": "semantic"}},
                {"exists": {"field": "superseded_by"}},
                {"range": {field: {"lt": before.isoformat()}}},
            ]
        }
    }


def _bulk(conn: Connection, operations: list[Json], what: str) -> Json:
    response = call(what, lambda: conn.writer.bulk(operations=operations, refresh="false"))
    failed = [
        item
        for item in response["items"]
        if "error" in next(iter(item.values())) and next(iter(item.values())).get("status") != 404
    ]
    if failed:
        raise EngineError(f"Elasticsearch refused {len(failed)} archive operations: {failed[:3]}")
    body: Json = response.body
    return body
