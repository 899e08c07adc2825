"""Reads with rules: one memory, a supersession chain, counts."""

from __future__ import annotations

from atlas_platform.exceptions import NotFound
from memory.engine.types import MemoryDoc
from memory.scoping import user_read_scope
from memory.services.common import backend, store_errors
from tenants.models import User

MAX_CHAIN = 100


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
