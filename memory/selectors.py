"""Reads with rules: one memory, a supersession chain, a page of the catalog."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from datetime import datetime

from atlas_platform.exceptions import NotFound, ValidationError
from memory.engine.types import MemoryDoc
from memory.scoping import catalog_scope, user_read_scope
from memory.services.common import backend, store_errors
from tenants.models import Tenant, User

MAX_CHAIN = 100
MAX_CATALOG_PAGE = 200


def memory_get(*, user: User, memory_id: str) -> MemoryDoc:
    """One memory of the user (or their tenant's catalog); 404 for anything else."""
    with store_errors():
        doc = backend().get(user_read_scope(user), memory_id)
    if doc is None:
        raise NotFound(f"No memory {memory_id!r} for this user.", code="memory_not_found")
    return doc


def memory_history(*, user: User, memory_id: str) -> list[MemoryDoc]:
    """The supersession chain through ``memory_id``, oldest first: everything it (transitively)
    superseded and everything that superseded it. Forgotten links are skipped."""
    start = memory_get(user=user, memory_id=memory_id)
    scope = user_read_scope(user)
    seen: dict[str, MemoryDoc] = {start.id: start}
    frontier = [start]
    with store_errors():
        while frontier and len(seen) < MAX_CHAIN:
            wanted = {
                linked
                for doc in frontier
                for linked in [*doc.supersedes, *([doc.superseded_by] if doc.superseded_by else [])]
                if linked not in seen
            }
            frontier = backend().get_many(scope, sorted(wanted)) if wanted else []
            seen.update({d.id: d for d in frontier})
    return sorted(seen.values(), key=lambda d: (d.created_at, d.id))


@dataclass
class CatalogPage:
    documents: list[MemoryDoc]
    next_cursor: str | None  # pass as ``after`` for the next page; None on the last page


def catalog_list(*, tenant: Tenant, after: str | None = None, limit: int = 50) -> CatalogPage:
    """The tenant's catalog documents, oldest first, ``limit`` at a time after the opaque
    cursor ``after`` (from the previous page)."""
    if not 1 <= limit <= MAX_CATALOG_PAGE:
        raise ValidationError(f"limit must be between 1 and {MAX_CATALOG_PAGE}.", code="bad_limit")
    with store_errors():
        docs = backend().scan(
            catalog_scope(tenant),
            memory_types=("catalog",),
            search_after=_decode_cursor(after) if after else None,
            limit=limit,
        )
    last = docs[-1] if len(docs) == limit else None
    return CatalogPage(documents=docs, next_cursor=_encode_cursor(last) if last else None)


def _encode_cursor(doc: MemoryDoc) -> str:
    raw = json.dumps([doc.created_at.isoformat(), doc.id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[str, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created_at, memory_id = json.loads(raw)
        if isinstance(created_at, str) and isinstance(memory_id, str):
            datetime.fromisoformat(created_at)  # only a real timestamp reaches the engine
            return created_at, memory_id
    except (binascii.Error, ValueError, TypeError):
        pass
    raise ValidationError("after is not a cursor this API returned.", code="bad_cursor")
