"""What an operator's forget request needs to change in memory: erase one journaled page of a
user's memories. The reads that go with it (the next page, what remains, the user's memories to
match a query against) are selectors (``memory.selectors``).

All of it runs with the platform's writer credential, never the user's key: an erasure must
reach every document of the user, also one whose key is gone.
"""

from __future__ import annotations

from atlas_platform.jobs import job_enqueue
from memory.models import SessionCursor
from memory.services.common import backend, personal_type, store_errors
from tenants.models import User


def memory_erase_page(
    *, tenant_id: str, user_id: str, memory_type: str, ids: list[str]
) -> list[str]:
    """Hard-delete those of ``ids`` that are user ``user_id``'s memories of ``memory_type`` (a
    personal type); returns the ids this call deleted. Idempotent: ids already gone, or not
    the user's, are skipped, so a page journaled before a crash can be erased again."""
    kind = personal_type(memory_type)
    with store_errors():
        return backend().delete_ids(tenant_id=tenant_id, user_id=user_id, memory_type=kind, ids=ids)


def memory_expunge_deleted(*, tenant_id: str, user_id: str) -> bool:
    """After an erasure: merge the deleted documents out of the index that held the user's
    memories, so none of their words still counts in the term statistics that score the
    recalls of anyone sharing that index (deleted documents count until merged away).
    Returns whether that is done; if not, ``memory_expunge_later`` queues a retry."""
    with store_errors():
        return backend().expunge_deleted(tenant_id=tenant_id, user_id=user_id)


def memory_expunge_later(*, tenant_id: str, user_id: str) -> None:
    """Queue ``memory.expunge_deleted`` after the commit (it retries every
    ``EXPUNGE_RETRY_S`` until the cluster lets the deletes go)."""
    job_enqueue("memory.expunge_deleted", tenant_id, user_id)


def memory_session_cursors_drop(*, user: User) -> int:
    """After an erasure: forget which session ``user``'s turns are in now (every agent's
    cursor); returns how many went. A cursor holds no text, but it names the session of the
    newest turn and that turn's time: once the turns are erased (a whole user, or chosen
    memories that may include them) it would still say when the user last spoke and lead the
    next text-only turn into an erased session. Its next turn opens a new inferred session."""
    deleted, _ = SessionCursor.objects.filter(user=user).delete()
    return deleted


EXPUNGE_RETRY_S = 40
