"""The erasure job: resolve the targets once, delete page by page across every personal memory
type, verify, purge the rows that can hold memory text, and write the receipt. Memory is
reached only through its public functions: ``memory_erase_page`` and the erasure selectors.

Resumable: the job holds a lease on the request (renewed every page). Each page is journaled
(``ErasureProgress.pending_ids``) and committed before the store deletes it, and counted in the
commit after, so a worker killed at any point resumes with exact counts: the next run finishes
a journaled page first (deletes are idempotent) and then searches for what is left.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from atlas_platform.exceptions import AtlasError
from atlas_platform.ledger import ledger_user_purge
from atlas_platform.tombstones import tombstone_record
from erasure.models import ErasedPage, ErasureProgress, ForgetRequest
from erasure.services.preview import ids_sha256, matching
from erasure.services.requests import ERASURE_LEASE
from memory.public import (
    ERASABLE_TYPES,
    memory_archived_count,
    memory_erase_page,
    memory_expunge_deleted,
    memory_expunge_later,
    memory_ids_page,
    memory_personal_all,
    memory_remaining_count,
    memory_session_cursors_drop,
    memory_supporting_episode_ids,
)
from tenants.models import PlatformToken, ScopedKey, User
from tenants.services.audit import audit_record
from tenants.services.scoped_keys import scoped_key_invalidate
from tenants.signals import user_data_erasing

logger = logging.getLogger(__name__)
RUNNABLE = (ForgetRequest.Status.APPROVED, ForgetRequest.Status.RUNNING)


class LeaseLost(Exception):
    """Another worker took the request over (this one stalled past its lease): stop quietly."""


def forget_request_execute(*, request_id: int) -> ForgetRequest | None:
    """Run (or resume) an approved request's erasure to ``done`` or ``failed``. Returns None
    when there is nothing to do here (not runnable, or another worker holds a live lease)."""
    owner = uuid.uuid4().hex
    request = _claim(request_id, owner)
    if request is None:
        return None
    job = _Job(request, owner)
    try:
        job.run()
    except LeaseLost:
        logger.warning("erasure lease lost", extra={"forget_request_id": request_id})
        return None
    except AtlasError as exc:
        return job.fail(exc.message)
    except Exception as exc:
        job.fail(f"Internal error ({type(exc).__name__}); see the worker log.")
        raise
    return job.request


def _claim(request_id: int, owner: str) -> ForgetRequest | None:
    with transaction.atomic():
        request = (
            ForgetRequest.objects.select_for_update(of=("self",))
            .select_related("tenant", "user")
            .filter(pk=request_id)
            .first()
        )
        if request is None or request.status not in RUNNABLE:
            return None
        if request.status == ForgetRequest.Status.RUNNING and ERASURE_LEASE.is_live(request):
            return None  # a live worker has it; this message is a duplicate
        first = request.status == ForgetRequest.Status.APPROVED
        request.status = ForgetRequest.Status.RUNNING
        request.lease_owner, request.lease_expires_at = owner, ERASURE_LEASE.deadline()
        request.started_at = request.started_at or timezone.now()
        request.save(update_fields=["status", "lease_owner", "lease_expires_at", "started_at"])
        audit_record(
            action="forget_request.start" if first else "forget_request.resume_run",
            tenant=request.tenant,
            subject_user=request.user,
            target=request,
            metadata={"forget_request_id": request.pk, "retry_count": request.retry_count},
        )
    return request


class _Job:
    def __init__(self, request: ForgetRequest, owner: str) -> None:
        self.request, self.owner = request, owner
        self.tenant_id, self.user_id = request.tenant.memory_id, request.user_ref
        self.user = {"tenant_id": self.tenant_id, "user_id": self.user_id}
        self.archived_found = 0  # of the targets, archived facts when this run started
        self.archived_remaining = 0  # and after the erasure (0: verified)

    # --- steps -------------------------------------------------------------------------------
    def run(self) -> None:
        targets = self._targets()
        # In the tombstone log before the first delete: a restore re-applies it (lifecycle app).
        tombstone_record(
            "erasure",
            tenant=self.tenant_id,
            user=self.user_id,
            memory_ids=targets,
            delete_user=self.request.delete_user_record,
            forget_request=self.request.pk,
        )
        # Archived facts are erased with the rest (the erase pages reach the archive too);
        # counted first so that the receipt says how many were there.
        self.archived_found = memory_archived_count(**self.user, among=targets)
        for kind in ERASABLE_TYPES:
            self._erase(kind, targets)
        remaining = self._verify(targets)  # counts the archive too (count_ids reaches it)
        self.archived_remaining = memory_archived_count(**self.user, among=targets)
        if remaining:
            left = ", ".join(f"{kind}: {n}" for kind, n in remaining.items())
            self.fail(f"Verification found documents left ({left}); retry to erase them.")
            return
        # Deleted documents keep counting in the index's term statistics until merged away;
        # the cluster may hold them a little longer: then a task merges again later.
        if not memory_expunge_deleted(tenant_id=self.tenant_id, user_id=self.user_id):
            memory_expunge_later(tenant_id=self.tenant_id, user_id=self.user_id)
        self._finish(targets)

    def _targets(self) -> list[str] | None:
        """None for a whole user; else the ids to erase, resolved once and stored (ids only)."""
        request = self.request
        if request.scope == ForgetRequest.Scope.USER:
            return None
        if request.targets_resolved:
            return list(request.memory_ids)
        if request.scope == ForgetRequest.Scope.QUERY:
            ids = self._matching(request.query)
        else:
            ids = list(request.memory_ids)
        if request.include_supporting_episodes:
            ids = list(dict.fromkeys([*ids, *self._supporting_episodes(ids)]))

        def resolve(row: ForgetRequest) -> None:
            row.memory_ids, row.targets_resolved, row.query = ids, True, ""

        self._commit(resolve)
        return ids

    def _matching(self, query: str) -> list[str]:
        """Every personal memory whose text fields contain the query (case-insensitive,
        whitespace-normalised phrase match), superseded ones included."""
        return [doc.id for doc in matching(query, memory_personal_all(**self.user))]

    def _supporting_episodes(self, ids: list[str]) -> list[str]:
        return memory_supporting_episode_ids(**self.user, memory_ids=ids)

    def _erase(self, kind: str, targets: list[str] | None) -> None:
        progress, _ = ErasureProgress.objects.get_or_create(request=self.request, kind=kind)
        while not progress.done:
            if progress.pending_ids:
                page = list(progress.pending_ids)
                memory_erase_page(**self.user, memory_type=kind, ids=page)
                progress = self._save_progress(progress, _counted(page))
                continue
            page = memory_ids_page(
                **self.user, memory_type=kind, among=targets, limit=settings.ATLAS_ERASURE_PAGE_SIZE
            )
            progress = self._save_progress(progress, _journaled(page))

    def _verify(self, targets: list[str] | None) -> dict[str, int]:
        remaining: dict[str, int] = {}
        for kind in ERASABLE_TYPES:
            n = memory_remaining_count(**self.user, memory_type=kind, among=targets)
            ErasureProgress.objects.filter(request=self.request, kind=kind).update(remaining=n)
            if n:
                remaining[kind] = n
                # A retry must search this index again.
                ErasureProgress.objects.filter(request=self.request, kind=kind).update(done=False)
        return remaining

    def _finish(self, targets: list[str] | None) -> None:
        request = self.request
        if request.delete_user_record and request.user_id is not None:
            self._invalidate_keys(request.user)  # on the cluster, before the row goes
        with transaction.atomic():
            row = self._locked()
            progress = list(row.progress.order_by("id").prefetch_related("erased_pages"))
            user = row.user
            purged = ledger_user_purge(user=user) if user is not None else 0
            others = _purge_other_apps(user, whole=row.scope == ForgetRequest.Scope.USER)
            if user is not None and (cursors := memory_session_cursors_drop(user=user)):
                others["memory.session_cursors"] = cursors
            erased = {i for p in progress for i in p.erased_ids()}
            now = timezone.now()
            row.receipt = {
                "forget_request_id": row.pk,
                "tenant_id": row.tenant_id,
                "user_id": row.user_ref,
                # the id the operator knows the user by (the caller's own id)
                "user_external_id": user.external_id if user is not None else None,
                "scope": row.scope,
                "query_sha256": row.query_sha256 or None,
                "reason": row.justification,
                "ticket": row.ticket,
                "include_supporting_episodes": row.include_supporting_episodes,
                # the dry runs shown at opening and at approval: counts, span, ids' hash
                "previewed_at_open": row.preview_at_open,
                "previewed_at_approval": row.preview_approved,
                "indices": {p.kind: p.as_receipt() for p in progress},
                # superseded facts moved out of the hot index (lifecycle archive): erased too
                "archive": {
                    "included": True,
                    "archived_found_at_start": self.archived_found,
                    "remaining": self.archived_remaining,
                },
                "total_deleted": sum(p.deleted for p in progress),
                "erased_ids_sha256": ids_sha256(erased),
                "not_found_ids": [i for i in (targets or []) if i not in erased],
                "idempotency_records_deleted": purged,
                "other_records_deleted": others,
                "user_record_deleted": bool(row.delete_user_record and user is not None),
                "verification": {"remaining": 0, "checked_at": now.isoformat()},
                "requested_by": row.requested_by_label,
                "approved_by": row.approver_label,
                "completed_at": now.isoformat(),
            }
            row.status, row.verified, row.finished_at = ForgetRequest.Status.DONE, True, now
            row.lease_owner, row.lease_expires_at, row.query = "", None, ""
            row.save()
            audit_record(
                action="forget_request.complete",
                tenant=row.tenant,
                subject_user=user,
                target=row,
                metadata={
                    "forget_request_id": row.pk,
                    "deleted": {p.kind: p.deleted for p in progress},
                    "idempotency_records_deleted": purged,
                    "user_record_deleted": row.receipt["user_record_deleted"],
                },
            )
            if row.delete_user_record and user is not None:
                _delete_user(user)
        logger.info(
            "erasure done",
            extra={"forget_request_id": row.pk, "deleted": row.receipt["total_deleted"]},
        )
        self.request = row

    def fail(self, reason: str) -> ForgetRequest | None:
        """Mark the request failed (retryable); None if another worker has taken it over."""
        with transaction.atomic():
            try:
                row = self._locked()
            except LeaseLost:
                return None
            row.status, row.reason, row.verified = ForgetRequest.Status.FAILED, reason[:2000], None
            row.lease_owner, row.lease_expires_at = "", None
            row.save()
            audit_record(
                action="forget_request.fail",
                tenant=row.tenant,
                subject_user=row.user,
                target=row,
                metadata={"forget_request_id": row.pk, "retry_count": row.retry_count},
            )
        self.request = row
        return row

    # --- leases and commits ------------------------------------------------------------------
    def _locked(self) -> ForgetRequest:
        row = (
            ForgetRequest.objects.select_for_update(of=("self",))
            .select_related("tenant", "user")
            .get(pk=self.request.pk)
        )
        if row.lease_owner != self.owner or row.status != ForgetRequest.Status.RUNNING:
            raise LeaseLost
        return row

    def _commit(self, change: Callable[[ForgetRequest], None]) -> None:
        """Apply ``change`` to the request and renew the lease, in one transaction."""
        with transaction.atomic():
            row = self._locked()
            change(row)
            row.lease_expires_at = ERASURE_LEASE.deadline()
            row.save()
        self.request = row

    def _save_progress(
        self, progress: ErasureProgress, change: Callable[[ErasureProgress], None]
    ) -> ErasureProgress:
        """Commit a progress step together with the lease renewal (or not at all)."""
        with transaction.atomic():
            row = self._locked()
            row.lease_expires_at = ERASURE_LEASE.deadline()
            row.save(update_fields=["lease_expires_at"])
            fresh = ErasureProgress.objects.select_for_update().get(pk=progress.pk)
            change(fresh)
            fresh.save()
        return fresh

    def _invalidate_keys(self, user: User | None) -> None:
        live = (ScopedKey.Status.ACTIVE, ScopedKey.Status.PENDING_INVALIDATION)
        for key in ScopedKey.objects.filter(user=user, status__in=live).select_related("user"):
            scoped_key_invalidate(key=key)


def _journaled(page: list[str]) -> Callable[[ErasureProgress], None]:
    def apply(progress: ErasureProgress) -> None:
        if page:
            progress.pending_ids = page
        else:
            progress.done = True

    return apply


def _counted(page: list[str]) -> Callable[[ErasureProgress], None]:
    def apply(progress: ErasureProgress) -> None:
        progress.deleted += len(page)
        progress.pages += 1
        progress.pending_ids = []
        ErasedPage.objects.create(progress=progress, ids=page)

    return apply


def _purge_other_apps(user: User | None, *, whole: bool) -> dict[str, int]:
    """What the apps above memory hold of the user (``tenants.signals.user_data_erasing``)."""
    if user is None:
        return {}
    counts: dict[str, int] = {}
    replies = user_data_erasing.send(sender=ForgetRequest, user=user, whole_user=whole)
    for _receiver, deleted in replies:
        reply: dict[str, int] = deleted if isinstance(deleted, dict) else {}
        for table, n in reply.items():
            counts[table] = counts.get(table, 0) + n
    return counts


def _delete_user(user: User) -> None:
    """The subject's row, its own tokens and key rows (their ledger entries went before)."""
    PlatformToken.objects.filter(user=user).delete()
    user.delete()
