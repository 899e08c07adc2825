"""The tenant catalog: shared knowledge with no user, managed by operators."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from atlas_platform.exceptions import NotFound, ValidationError
from memory.engine.types import MemoryDoc
from memory.services.common import (
    backend,
    clean_metadata,
    clean_text,
    embedder,
    new_id,
    now,
    store_errors,
)
from memory.services.scoping import catalog_scope
from tenants.models import Tenant
from tenants.services.audit import audit_record

MAX_IMPORT = 5000
KEY_PATTERN = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")


def catalog_doc_id(tenant: Tenant, key: str) -> str:
    """The engine id of the tenant's catalog document ``key``.

    Engine ids are global, so a client-chosen key is never used as one: it lives in the
    tenant's own namespace, and no tenant can name (and so overwrite) another tenant's document
    or a user's memory (those ids are random hex, without dots).
    """
    return f"catalog.{tenant.pk}.{key}"


PUBLIC_PREFIX = "catalog:"
ENGINE_ID = re.compile(r"catalog\.\d+\.(.+)", re.DOTALL)


def catalog_public_id(engine_id: str) -> str:
    """The id callers see for a catalog document: ``catalog:<key>``, the tenant's own key
    (the engine id's tenant namespace, ``catalog.<tenant pk>.``, is internal). Personal ids
    never hold a colon or a dot."""
    found = ENGINE_ID.match(engine_id)
    return PUBLIC_PREFIX + found.group(1) if found else engine_id


def catalog_engine_id(tenant: Tenant, memory_id: str) -> str:
    """The engine id behind a public catalog id (``catalog:<key>``); any other id unchanged."""
    if memory_id.startswith(PUBLIC_PREFIX):
        return catalog_doc_id(tenant, memory_id[len(PUBLIC_PREFIX) :])
    return memory_id


def _resolve(tenant: Tenant, key_or_id: str) -> str:
    """A document named by its key, its public id or its engine id."""
    prefix = catalog_doc_id(tenant, "")
    if key_or_id.startswith(prefix):
        return key_or_id
    if key_or_id.startswith(PUBLIC_PREFIX):
        return catalog_engine_id(tenant, key_or_id)
    return catalog_doc_id(tenant, key_or_id)


@dataclass
class CatalogImport:
    written: list[str]
    removed: int


def _catalog_doc(tenant: Tenant, item: dict[str, Any], vector: list[float]) -> MemoryDoc:
    moment = now()
    return MemoryDoc(
        id=catalog_doc_id(tenant, str(item.get("id") or new_id())),
        tenant_id=tenant.memory_id,
        user_id=None,
        memory_type="catalog",
        text=item["text"],
        created_at=moment,
        timestamp=moment,
        embedding=vector,
        source="operator",
        name=item.get("name"),
        tags=list(item.get("tags") or []),
        metadata=item["metadata"],
    )


def _clean_items(items: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    if not items:
        raise ValidationError("Give at least one catalog document.", code="empty_import")
    if len(items) > MAX_IMPORT:
        raise ValidationError(
            f"At most {MAX_IMPORT} documents per import.", code="import_too_large"
        )
    cleaned = []
    for n, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            raise ValidationError(
                f"Document {n} must be an object with 'text'.", code="bad_document"
            )
        key = item.get("id")
        if isinstance(key, str) and key.startswith(PUBLIC_PREFIX):  # the id a read showed
            key = key[len(PUBLIC_PREFIX) :]
            item = {**item, "id": key}
        if key is not None and not (isinstance(key, str) and KEY_PATTERN.match(key)):
            raise ValidationError(
                f"Document {n} id: use 1-128 letters, digits and _ . : -", code="bad_id"
            )
        text = clean_text(item.get("text"), field=f"document {n} text")
        cleaned.append({**item, "text": text, "metadata": clean_metadata(item.get("metadata"))})
    ids = [str(i["id"]) for i in cleaned if i.get("id")]
    if len(ids) != len(set(ids)):
        raise ValidationError("Two documents share an id.", code="duplicate_id")
    return cleaned


def catalog_import(
    *, tenant: Tenant, documents: Sequence[dict[str, Any]], replace: bool = False
) -> CatalogImport:
    """Write catalog documents (an ``id`` replaces that document); ``replace=True`` first
    removes every other catalog document of the tenant (after the new ones are written, so the
    catalog is never empty in between). All input is checked and embedded before anything is
    written; the audit event follows the store's writes in its own transaction."""
    items = _clean_items(documents)
    with store_errors():
        vectors = embedder().embed([i["text"] for i in items])
        docs = [
            _catalog_doc(tenant, item, [float(x) for x in v])
            for item, v in zip(items, vectors, strict=True)
        ]
        backend().write(docs)
        removed = _remove_all(tenant, keep={d.id for d in docs}) if replace else 0
    with transaction.atomic():
        audit_record(
            action="catalog.import",
            tenant=tenant,
            metadata={"written": len(docs), "removed": removed, "replace": replace},
        )
    return CatalogImport(written=[d.id for d in docs], removed=removed)


def _remove_all(tenant: Tenant, *, keep: set[str]) -> int:
    store, scope, removed = backend(), catalog_scope(tenant), 0
    after: tuple[str, str] | None = None
    while page := store.scan(scope, memory_types=("catalog",), search_after=after, limit=500):
        after = (page[-1].created_at.isoformat(), page[-1].id)
        for doc in page:
            if doc.id not in keep and store.delete(doc):
                removed += 1
    return removed


def catalog_delete(*, tenant: Tenant, memory_id: str) -> None:
    """Delete one catalog document, named by its key or its engine id."""
    with store_errors():
        doc = backend().get(catalog_scope(tenant), _resolve(tenant, memory_id))
        if doc is None or doc.memory_type != "catalog":
            raise NotFound(f"No catalog document {memory_id!r}.", code="memory_not_found")
        backend().delete(doc)
    with transaction.atomic():
        audit_record(action="catalog.delete", tenant=tenant, metadata={"memory_id": doc.id})
