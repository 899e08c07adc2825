"""Writes, always with the writer credential: bulk index, optimistic read-modify-write,
batched usage, deletes. The reads that are not part of a write are elsewhere: a user's scoped
reads in ``reads``, the writer credential's own in ``writer_reads``.

Writes index without refreshing, then wait for a shared refresh (``refresh.GroupRefresh``), so
the very next recall sees them without waiting for the periodic refresh (``wait_for`` would
add up to a second per write) and concurrent writers pay for one refresh, not one each.
"""

from __future__ import annotations

import dataclasses
import functools
import random
import time
from collections.abc import Callable
from typing import Any

from elasticsearch import ApiError, ConflictError, NotFoundError, TransportError

from memory.engine.base import EngineError, UpdateConflict, usage_changes
from memory.engine.elasticsearch.archive import SUFFIX, archive_index
from memory.engine.elasticsearch.client import Connection, call, failure
from memory.engine.elasticsearch.queries import NO_VECTORS, context_holders_query, routing
from memory.engine.elasticsearch.writer_reads import user_hits
from memory.engine.types import MemoryDoc, MemoryType, UsageBump

Json = dict[str, Any]
UPDATE_RETRIES = 20


class Gone(EngineError):
    """The document to update is not there (any more)."""


NO_REFRESH = "false"


def write(conn: Connection, docs: list[MemoryDoc]) -> None:
    """Index (insert or replace by id), then the group refresh."""
    _bulk(conn, docs, "index")


def create(conn: Connection, docs: list[MemoryDoc]) -> set[str]:
    """Create-only (``op_type`` create): an id the index holds already is left as it is and
    returned, so a retried write finds its first attempt's document instead of a second one.
    The refresh runs in both cases: a first attempt whose refresh failed becomes visible."""
    return _bulk(conn, docs, "create")


def _bulk(conn: Connection, docs: list[MemoryDoc], op: str) -> set[str]:
    if not docs:
        return set()
    operations: list[Json] = []
    indices = []
    for doc in docs:
        index = conn.doc_index(doc)
        indices.append(index)
        meta = {"_index": index, "_id": doc.id, "routing": routing(doc)}
        operations += [{op: meta}, doc.to_source()]
    response = call(
        "write documents",
        lambda: conn.writer.bulk(operations=operations, refresh=NO_REFRESH),
    )
    existing: set[str] = set()
    failures: list[str] = []
    for item in response["items"] if response.get("errors") else []:
        outcome = item.get(op, {})
        if "error" not in outcome:
            continue
        if op == "create" and outcome.get("status") == 409:
            existing.add(str(outcome.get("_id")))
            continue
        # The error's type and reason only: a refusal may quote the document (its text, its
        # metadata), which belongs neither in a log line nor in an answer.
        error = outcome["error"] if isinstance(outcome["error"], dict) else {}
        failures.append(f"{outcome.get('_id')}: {error.get('type', 'error')}")
    # A document found there already (a retry's) is read back at once: searchable now.
    conn.after_write(indices, now=bool(existing or failures))
    if failures:
        raise EngineError(f"Elasticsearch refused {len(failures)} document(s): {failures}")
    return existing


def update(
    conn: Connection, doc: MemoryDoc, mutate: Callable[[MemoryDoc], dict[str, Any]]
) -> MemoryDoc:
    doc_routing = routing(doc)
    index = conn.doc_index(doc)
    for attempt in range(UPDATE_RETRIES):
        current, seq_no, primary_term = _get_versioned(conn, index, doc.id, doc_routing)
        changes = mutate(current)
        if not changes:
            return dataclasses.replace(current, embedding=None)
        updated = dataclasses.replace(current, **changes)
        try:
            conn.writer.index(
                index=index,
                id=doc.id,
                routing=doc_routing,
                document=updated.to_source(),
                if_seq_no=seq_no,
                if_primary_term=primary_term,
                refresh=NO_REFRESH,
            )
        except ConflictError:
            # Jitter so that writers who lost together do not collide again.
            time.sleep(random.uniform(0, 0.005 * (attempt + 1)))  # noqa: S311
            continue
        except (ApiError, TransportError) as exc:
            raise failure(f"update {doc.id}", exc) from exc
        conn.after_write([index])
        return dataclasses.replace(updated, embedding=None)
    raise UpdateConflict(f"{doc.id} kept changing under {UPDATE_RETRIES} attempts to update it")


def record_usage(
    conn: Connection, bumps: list[UsageBump], one_by_one: Callable[[list[UsageBump]], int]
) -> int:
    """One ``mget`` and one conditional ``bulk`` for the whole batch (no scripts on this
    cluster), visible at the next periodic refresh; the few that lose a race to another
    writer go through ``one_by_one`` (``update``)."""
    if not bumps:
        return 0
    refs = [
        {"_index": conn.doc_index(b.doc), "_id": b.doc.id, "routing": routing(b.doc)} for b in bumps
    ]
    found = call("read usage", lambda: conn.writer.mget(docs=refs))["docs"]
    operations: list[Json] = []
    batch: list[UsageBump] = []
    for bump, ref, got in zip(bumps, refs, found, strict=True):
        if not got.get("found"):
            continue  # forgotten since it was recalled
        current = MemoryDoc.from_source(got["_source"])
        updated = dataclasses.replace(current, **usage_changes(current, bump))
        condition = {"if_seq_no": got["_seq_no"], "if_primary_term": got["_primary_term"]}
        operations += [{"index": {**ref, **condition}}, updated.to_source()]
        batch.append(bump)
    if not operations:
        return 0
    response = call(
        "record usage",
        lambda: conn.writer.bulk(operations=operations, refresh=NO_REFRESH),
    )
    changed = 0
    for bump, item in zip(batch, response["items"], strict=True):
        status = item["index"].get("status", 500)
        if status < 300:
            changed += 1
        elif status == 409:
            changed += one_by_one([bump])
    return changed


def delete(conn: Connection, doc: MemoryDoc) -> bool:
    index = conn.doc_index(doc)
    # Before the delete: a failure then leaves the turn for a retry, never its words behind.
    if doc.user_id is not None and doc.memory_type == "episodic":
        clear_contexts(conn, doc.tenant_id, doc.user_id, [doc.id])
    try:
        conn.writer.delete(index=index, id=doc.id, routing=routing(doc), refresh=NO_REFRESH)
    except NotFoundError as exc:
        if _error_body(exc).get("result") == "not_found":
            return _delete_archived(conn, doc)
        raise failure(f"delete {doc.id}", exc) from exc
    except (ApiError, TransportError) as exc:
        raise failure(f"delete {doc.id}", exc) from exc
    conn.after_write([index])
    return True


def _delete_archived(conn: Connection, doc: MemoryDoc) -> bool:
    """Forget a fact from its archive (``archive``); False when it is not there either."""
    if doc.user_id is None or doc.memory_type != "semantic":
        return False
    index = archive_index(conn, doc.tenant_id, doc.user_id)
    try:
        conn.writer.delete(index=index, id=doc.id, routing=routing(doc), refresh=NO_REFRESH)
    except NotFoundError:
        return False  # not there, or no archive index at all
    except (ApiError, TransportError) as exc:
        raise failure(f"delete {doc.id}", exc) from exc
    conn.after_write([index])
    return True


CONTEXT_HOLDERS = 100  # a turn's context comes from its neighbours: a deleted turn has few


def clear_contexts(conn: Connection, tenant_id: str, user_id: str, ids: list[str]) -> None:
    """Clear the lexical context of the user's turns that hold words of the deleted turns
    ``ids`` (``MemoryDoc.context_ids``), so erased words are not searchable there."""
    for start in range(0, len(ids), CONTEXT_HOLDERS):
        page = ids[start : start + CONTEXT_HOLDERS]
        body: Json = {
            "size": CONTEXT_HOLDERS * 2,
            "track_total_hits": False,
            "query": context_holders_query(tenant_id, user_id, page),
            **NO_VECTORS,
        }
        search = functools.partial(
            conn.writer.search,
            index=conn.index_for(tenant_id, user_id),
            ignore_unavailable=True,
            **body,
        )
        response = call("find turns holding a deleted turn's words", search)
        for hit in response["hits"]["hits"]:
            holder = MemoryDoc.from_source(hit["_source"])
            try:
                update(conn, holder, _drop_context)
            except Gone:
                continue  # deleted meanwhile: nothing left to clear


def _drop_context(current: MemoryDoc) -> dict[str, Any]:
    return {"context": None, "context_ids": []} if current.context_ids else {}


def delete_ids(
    conn: Connection, *, tenant_id: str, user_id: str, memory_type: MemoryType, ids: list[str]
) -> list[str]:
    """No delete-by-query: search the user's own documents among ``ids`` (with the routing
    each was stored under), then bulk-delete them."""
    if not ids:
        return []
    hits = user_hits(conn, tenant_id, user_id, memory_type, ids, len(set(ids)))
    if not hits:
        return []
    if memory_type == "episodic":  # before the delete, as in ``delete``
        clear_contexts(conn, tenant_id, user_id, [h["_id"] for h in hits])
    operations: list[Json] = [
        {"delete": {"_index": h["_index"], "_id": h["_id"], "routing": h.get("_routing")}}
        for h in hits
    ]
    response = call(
        "delete documents",
        lambda: conn.writer.bulk(operations=operations, refresh=NO_REFRESH),
    )
    conn.after_write([h["_index"] for h in hits])
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


def _get_versioned(
    conn: Connection, index: str, memory_id: str, doc_routing: str
) -> tuple[MemoryDoc, int, int]:
    try:
        got = conn.writer.get(index=index, id=memory_id, routing=doc_routing)
    except NotFoundError as exc:
        raise Gone(f"Memory {memory_id} is gone.") from exc
    except (ApiError, TransportError) as exc:
        raise failure(f"read {memory_id}", exc) from exc
    return MemoryDoc.from_source(got["_source"]), got["_seq_no"], got["_primary_term"]


def expunge_deleted(conn: Connection, tenant_id: str, user_id: str | None) -> bool:
    """Merge away the deleted documents of the index that held the user's (or the tenant's)
    documents: until then a deleted document still counts in the index's term statistics.

    Flush (a commit that holds the deletes), then merge every segment with a delete
    (``merge.policy.expunge_deletes_allowed`` is 0 in the template). The shard keeps soft
    deletes newer than its retention lease, which advances in the background (about every
    30 s on 9.x), so a merge right after an erasure may have to be repeated: returns whether
    the index holds no deleted document any more."""
    live = conn.index_for(tenant_id, user_id)
    # The archive beside it too: an erasure deletes archived facts there.
    return all([_expunge(conn, live), _expunge(conn, live + SUFFIX)])


def _expunge(conn: Connection, index: str) -> bool:
    w = conn.writer
    if not call("check the index", lambda: w.indices.exists(index=index)):
        return True  # never made (a user without archived facts): nothing to merge
    call("flush", lambda: w.indices.flush(index=index, ignore_unavailable=True))
    call(
        "expunge deleted documents",
        lambda: w.indices.forcemerge(
            index=index, only_expunge_deletes=True, ignore_unavailable=True
        ),
    )
    conn.after_write([index])
    stats = call(
        "read index stats",
        lambda: w.options(ignore_status=404).indices.stats(index=index, metric="docs"),
    )
    deleted = stats.body.get("_all", {}).get("primaries", {}).get("docs", {}).get("deleted", 0)
    return int(deleted) == 0


def _error_body(exc: ApiError) -> Json:
    return exc.body if isinstance(exc.body, dict) else {}
