"""Moving documents into the per-tenant layout (``client.Connection``'s): out of the index all
tenants once shared (``<prefix>-memories``), and between a tenant's index and its users' own
indices when the tenant's statistics scope changes. Search (``search_after``) + bulk: the
test cluster has no ``_reindex``.

Documents written before the layout carry database primary keys as tenant and user ids;
``translate`` maps them to the globally unique ids (``Tenant.memory_id`` / ``User.memory_id``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from memory.engine.base import EngineError
from memory.engine.elasticsearch.archive import SUFFIX, is_archive
from memory.engine.elasticsearch.client import Connection, call
from memory.engine.elasticsearch.queries import routing
from memory.engine.types import MemoryDoc

Json = dict[str, Any]
PAGE = 500
KEEP_ALIVE = "2m"
# (tenant id, user id or None) as stored -> as they must be; None: no such tenant / user.
Translate = Callable[[str, str | None], tuple[str, str | None] | None]


@dataclass
class Relocation:
    moved: int = 0
    kept: int = 0
    orphans: int = 0  # documents of tenants or users the database no longer has (left alone)
    legacy_orphans: int = 0  # of them, in the legacy index (which is then kept)
    sources: list[str] = field(default_factory=list)
    legacy_deleted: bool = False


def relocate(conn: Connection, translate: Translate, *, delete_legacy: bool) -> Relocation:
    """Put every document of the legacy index and of this deployment's memory indices where
    the layout says, with translated ids. Idempotent: a second run moves nothing."""
    legacy = conn.config.legacy_index
    existing = call(
        "list indices",
        lambda: conn.writer.indices.get(
            index=[legacy, conn.index_pattern], allow_no_indices=True, ignore_unavailable=True
        ),
    )
    report = Relocation(sources=sorted(existing.body))
    for index in report.sources:
        _relocate_index(conn, index, translate, report, is_legacy=index == legacy)
    if delete_legacy and legacy in existing.body and not report.legacy_orphans:
        call("delete the legacy index", lambda: conn.writer.indices.delete(index=legacy))
        report.legacy_deleted = True
    return report


def _relocate_index(
    conn: Connection, index: str, translate: Translate, report: Relocation, *, is_legacy: bool
) -> None:
    # A point in time: the pages read stay put while this moves documents out of the index.
    pit = call(
        "open a point in time",
        lambda: conn.writer.open_point_in_time(index=index, keep_alive=KEEP_ALIVE),
    )["id"]
    try:
        _relocate_pages(conn, index, pit, translate, report, is_legacy=is_legacy)
    finally:
        call("close a point in time", lambda: conn.writer.close_point_in_time(id=pit))


def _relocate_pages(
    conn: Connection,
    index: str,
    pit: str,
    translate: Translate,
    report: Relocation,
    *,
    is_legacy: bool,
) -> None:
    after: list[Any] | None = None
    while True:
        body: Json = {
            "size": PAGE,
            "pit": {"id": pit, "keep_alive": KEEP_ALIVE},
            "sort": ["_shard_doc"],
            "query": {"match_all": {}},
        }
        if after is not None:
            body["search_after"] = after
        hits = call("read documents", functools.partial(conn.writer.search, **body))["hits"]["hits"]
        if not hits:
            return
        after = hits[-1]["sort"]
        operations: list[Json] = []
        targets: set[str] = set()
        for hit in hits:
            source = hit["_source"]
            ids = translate(str(source.get("tenant_id")), source.get("user_id"))
            doc = _as_doc(source, ids)
            if ids is None or doc is None:
                report.orphans += 1
                report.legacy_orphans += is_legacy
                continue
            # An archived fact moves to the archive beside its hot index.
            target = conn.doc_index(doc) + (SUFFIX if is_archive(index) else "")
            if target == index and ids == (source["tenant_id"], source.get("user_id")):
                report.kept += 1
                continue
            meta = {"_index": target, "_id": doc.id, "routing": routing(doc)}
            operations += [{"index": meta}, doc.to_source()]
            if not is_legacy and target != index:  # the legacy index goes as a whole at the end
                operations.append(
                    {"delete": {"_index": index, "_id": hit["_id"], "routing": hit.get("_routing")}}
                )
            targets.add(target)
            report.moved += 1
        if operations:
            response = call(
                "move documents",
                functools.partial(conn.writer.bulk, operations=operations, refresh="false"),
            )
            if response.get("errors"):
                failed = [i for i in response["items"] if "error" in next(iter(i.values()))]
                raise EngineError(f"The cluster refused {len(failed)} moves: {failed[:3]}")
            conn.after_write(sorted(targets | {index}))


def _as_doc(source: Json, ids: tuple[str, str | None] | None) -> MemoryDoc | None:
    """The document with its new ids; None for one that is not a memory document at all."""
    if ids is None:
        return None
    try:
        return MemoryDoc.from_source({**source, "tenant_id": ids[0], "user_id": ids[1]})
    except (TypeError, ValueError):
        return None
