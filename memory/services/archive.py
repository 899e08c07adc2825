"""Superseded facts out of the hot index, and out of the archive after their retention
(``lifecycle.services.archive`` runs them per tenant, from beat).

Both work page by page with the platform's writer credential: an archived fact stays the
user's, read, exported and erased as before (``MemoryBackend``'s archive contract); only
recall without superseded facts, and its successor credit, stop searching it.
"""

from __future__ import annotations

from datetime import datetime

from memory.services.common import backend, store_errors

PAGE = 500


def memory_archive_superseded(*, tenant_id: str, user_id: str, before: datetime) -> int:
    """Move every fact of the user superseded before ``before`` into the archive; how many."""
    return _drained("archive_superseded", tenant_id, user_id, before)


def memory_archive_expire(*, tenant_id: str, user_id: str, before: datetime) -> int:
    """Hard-delete the user's archived facts superseded before ``before``; how many."""
    return _drained("archive_expire", tenant_id, user_id, before)


def _drained(step: str, tenant_id: str, user_id: str, before: datetime) -> int:
    """The backend's ``step`` page by page until a page comes back short; how many it took."""
    done = 0
    with store_errors():
        while True:
            page = getattr(backend(), step)(
                tenant_id=tenant_id, user_id=user_id, before=before, limit=PAGE
            )
            done += len(page)
            if len(page) < PAGE:
                return done


def memory_archived_count(*, tenant_id: str, user_id: str, among: list[str] | None = None) -> int:
    """How many of the user's memories (among ``among`` when given) are archived."""
    with store_errors():
        return backend().archive_count(tenant_id=tenant_id, user_id=user_id, among=among)
