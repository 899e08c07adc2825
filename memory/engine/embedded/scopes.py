"""Owners: one (tenant, user) pair, or a tenant's catalog, as one indexable value; and which
owners (with which memory types) a read searches."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from memory.engine.types import MemoryType, ReadScope, RecallFilter


def owner_key(tenant_id: str, user_id: str | None) -> str:
    """One indexable value per owner, all digits so that it is also one FTS token that no
    tokenizer or stemmer alters."""
    digest = hashlib.blake2b(repr((tenant_id, user_id)).encode(), digest_size=16).digest()
    return str(int.from_bytes(digest, "big"))


def user_where(
    tenant_id: str, user_id: str, memory_type: str, ids: list[str] | None
) -> tuple[str, tuple[Any, ...]]:
    """The user's rows of one type (among ``ids`` when given): fixed SQL, values as params."""
    where = "owner = ? AND tenant_id = ? AND memory_type = ?"
    params: tuple[Any, ...] = (owner_key(tenant_id, user_id), tenant_id, memory_type)
    if ids is not None:
        where += " AND id IN (SELECT value FROM json_each(?))"
        params += (json.dumps(ids),)
    return where, params


def scope_owners(scope: ReadScope) -> list[str]:
    catalog = owner_key(scope.tenant_id, None)
    if scope.user_id is None:
        return [catalog]
    return [owner_key(scope.tenant_id, scope.user_id), catalog]


def recall_owners(
    scope: ReadScope, wanted: RecallFilter
) -> list[tuple[str, tuple[MemoryType, ...]]]:
    """The owners a read searches, each with the memory types it may return there."""
    owners: list[tuple[str, tuple[MemoryType, ...]]] = []
    personal = tuple(kind for kind in wanted.memory_types if kind != "catalog")
    if scope.user_id is not None and personal:
        owners.append((owner_key(scope.tenant_id, scope.user_id), personal))
    if wanted.include_catalog:
        owners.append((owner_key(scope.tenant_id, None), ("catalog",)))
    return owners
