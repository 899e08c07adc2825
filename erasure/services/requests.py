"""The forget-request workflow: open, approve, reject, retry, and re-queue stalled jobs.

Who may do what is decided here as well as at every entry point (fail closed):

- open: an operator who may act on the user's tenant (tenant admin, platform admin), or a
  platform token of that tenant that may act for the user (its own user, or any user of its
  tenant for a tenant token);
- approve / reject / retry: tenant admins of the tenant and platform admins; auditors never.

Another tenant's user or request is "not found" (never "forbidden"), so ids do not leak.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from atlas_platform.exceptions import Conflict, NotFound, PermissionDenied, ValidationError
from atlas_platform.jobs import job_enqueue
from atlas_platform.leases import Lease
from erasure.models import ForgetRequest
from erasure.services.preview import forget_request_dry_run
from tenants.models import PlatformToken, User
from tenants.scoping import OperatorScope
from tenants.services.audit import audit_read, audit_record, query_digest

logger = logging.getLogger(__name__)
# The job's hold on its request (``execute.py`` takes and renews it, page by page).
ERASURE_LEASE = Lease(
    holder="lease_owner", until="lease_expires_at", seconds="ATLAS_ERASURE_LEASE_S", nobody=""
)
RUN_TASK = "erasure.run"  # queued by name: erasure.tasks imports the services, not we it
MAX_IDS = 10_000
MAX_QUERY_CHARS = 500
MAX_REASON_CHARS = 2000
MAX_TICKET_CHARS = 200


@dataclass(frozen=True)
class OperatorPrincipal:
    """A signed-in operator: the account (recorded as approver) and its tenant scope."""

    account: Any
    scope: OperatorScope

    @property
    def label(self) -> str:
        return str(self.account.get_username())


Principal = OperatorPrincipal | PlatformToken


def _refuse_foreign(by: Principal, tenant_id: int, user_id: int | None = None) -> None:
    """Not found unless ``by`` reaches the tenant (and, for a user token, the user)."""
    if isinstance(by, PlatformToken):
        reaches = (
            by.is_usable
            and by.tenant_id == tenant_id
            and (by.user_id is None or by.user_id == user_id)
        )
    else:
        reaches = by.scope.covers(tenant_id)
    if not reaches:
        raise NotFound("No such user or forget request here.", code="not_found")


def _require_decider(by: Principal, request: ForgetRequest) -> OperatorPrincipal:
    if not isinstance(by, OperatorPrincipal):
        raise PermissionDenied("Only operators decide forget requests.", code="forbidden")
    _refuse_foreign(by, request.tenant_id)
    if not by.scope.can_act:
        raise PermissionDenied("Auditors cannot decide forget requests.", code="forbidden")
    return by


def _clean_ids(memory_ids: Sequence[str]) -> list[str]:
    ids = list(dict.fromkeys(str(i).strip() for i in memory_ids if str(i).strip()))
    if not ids:
        raise ValidationError("List at least one memory id.", code="bad_memory_ids")
    if len(ids) > MAX_IDS:
        raise ValidationError(f"At most {MAX_IDS} ids per request.", code="bad_memory_ids")
    if any(len(i) > 128 for i in ids):
        raise ValidationError("A memory id is at most 128 characters.", code="bad_memory_ids")
    return ids


def _audit(request: ForgetRequest, action: str, **extra: Any) -> None:
    """Ids, counts and flags only: never a query's text, never memory text."""
    audit_record(
        action=action,
        tenant=request.tenant,
        subject_user=request.user,
        target=request,
        metadata={"forget_request_id": request.pk, "scope": request.scope, **extra},
    )


def forget_request_open(
    *,
    user: User,
    scope: str,
    by: Principal,
    memory_ids: Sequence[str] = (),
    query: str = "",
    include_supporting_episodes: bool = False,
    delete_user_record: bool = False,
    reason: str = "",
    ticket: str = "",
) -> ForgetRequest:
    """Open a pending request to erase some (``ids``, ``query``) or all (``user``) of a user's
    memories; an operator approves it before anything is deleted. An operator says why
    (``reason``) and names the ticket it answers; a token may. The dry run at opening is kept
    on the request (counts, span, the ids' hash: ``preview_at_open``)."""
    _refuse_foreign(by, user.tenant_id, user.pk)
    if isinstance(by, OperatorPrincipal) and not by.scope.can_act:
        raise PermissionDenied("Auditors cannot open forget requests.", code="forbidden")
    reason, ticket = reason.strip(), ticket.strip()
    if isinstance(by, OperatorPrincipal) and not (reason and ticket):
        raise ValidationError(
            "Give the reason for the erasure and the ticket reference it answers.",
            code="bad_reason",
        )
    if len(reason) > MAX_REASON_CHARS or len(ticket) > MAX_TICKET_CHARS:
        raise ValidationError(
            f"The reason is at most {MAX_REASON_CHARS} characters, the ticket {MAX_TICKET_CHARS}.",
            code="bad_reason",
        )
    if scope not in ForgetRequest.Scope.values:
        raise ValidationError("scope must be ids, query or user.", code="bad_scope")
    ids = _clean_ids(memory_ids) if scope == ForgetRequest.Scope.IDS else []
    query = query.strip() if scope == ForgetRequest.Scope.QUERY else ""
    if scope == ForgetRequest.Scope.QUERY and not query:
        raise ValidationError("A query scope needs a query.", code="bad_query")
    if len(query) > MAX_QUERY_CHARS:
        raise ValidationError(f"The query is over {MAX_QUERY_CHARS} chars.", code="bad_query")
    if delete_user_record and scope != ForgetRequest.Scope.USER:
        raise ValidationError("delete_user_record needs scope user.", code="bad_delete_user_record")
    token = by if isinstance(by, PlatformToken) else None
    draft = ForgetRequest(
        tenant_id=user.tenant_id,
        user=user,
        scope=scope,
        memory_ids=ids,
        query=query,
        include_supporting_episodes=include_supporting_episodes,
    )
    preview = forget_request_dry_run(request=draft)  # reads the store: before the transaction
    with transaction.atomic():
        request = ForgetRequest.objects.create(
            tenant_id=user.tenant_id,
            user=user,
            user_ref=user.memory_id,
            scope=scope,
            memory_ids=ids,
            query=query,
            include_supporting_episodes=include_supporting_episodes,
            delete_user_record=delete_user_record,
            requested_by_type="token" if token else "operator",
            requested_by_id=str(token.pk if token else by.account.pk),  # type: ignore[union-attr]
            requested_by_label=str(token.name if token else by.label),  # type: ignore[union-attr]
            justification=reason,
            ticket=ticket,
            preview_at_open=preview.record(),
            query_sha256=query_digest(query) if query else "",
        )
        _audit(
            request,
            "forget_request.open",
            memory_ids=len(ids),
            previewed=preview.total,
            ticket=ticket,
            include_supporting_episodes=include_supporting_episodes,
            delete_user_record=delete_user_record,
        )
    return request


def _locked(request: ForgetRequest) -> ForgetRequest:
    return (
        ForgetRequest.objects.select_for_update(of=("self",))
        .select_related("tenant", "user")
        .get(pk=request.pk)
    )


def _start_deadline() -> datetime:
    """A queued job should have started by then; past it, ``resume_stalled`` queues it again."""
    return ERASURE_LEASE.deadline()


def _enqueue(request_id: int) -> None:
    """Queue the job after the commit. If the broker is down, ``forget_request_resume_stalled``
    queues it once the start deadline has passed."""
    job_enqueue(RUN_TASK, request_id, queue=settings.ATLAS_ERASURE_QUEUE)


def forget_request_may_approve(*, request: ForgetRequest, by: Principal) -> bool:
    """Whether ``by`` may approve ``request`` now (what the admin offers: nothing else)."""
    if request.status != ForgetRequest.Status.PENDING:
        return False
    try:
        operator = _require_decider(by, request)
    except (PermissionDenied, NotFound):
        return False
    return not _needs_other_operator(request, operator)


def _needs_other_operator(request: ForgetRequest, operator: OperatorPrincipal) -> bool:
    return request.tenant.erasure_requires_second_operator and _opened_by(request, operator)


def forget_request_approve(
    *, request: ForgetRequest, by: Principal, seen: str | None = None
) -> ForgetRequest:
    """Approve a pending request and queue its job (after the commit). Where the tenant asks
    for four eyes (``erasure_requires_second_operator``), the operator who opened the request
    may not approve it (refused, and the refusal audited).

    The dry run is taken again here: ``seen`` is the fingerprint of the preview the approver
    looked at, and if the targeted memories changed since, nothing is approved
    (``preview_changed``: look again). Approval fixes the targets: the previewed ids (a
    query's matches; its text is wiped now), erased by the job and nothing else."""
    operator = _require_decider(by, request)
    if _needs_other_operator(request, operator):
        audit_read(
            action="refused.approve_own_request",
            tenant=request.tenant,
            subject_user=request.user,
            target_type="erasure.forgetrequest",
            target_id=str(request.pk),
            metadata={"forget_request_id": request.pk},
            coalesce=False,
        )
        raise PermissionDenied(
            "This tenant requires a second operator: the one who opened a forget request "
            "cannot approve it.",
            code="second_operator_required",
        )
    if request.status != ForgetRequest.Status.PENDING:
        raise Conflict(f"The request is {request.status}, not pending.", code="not_pending")
    preview = forget_request_dry_run(request=request)  # reads the store: before the lock
    if seen is not None and seen != preview.fingerprint:
        raise Conflict(
            "What this request would erase changed since the preview was shown; review the "
            "new preview and approve again.",
            code="preview_changed",
        )
    with transaction.atomic():
        request = _locked(request)
        if request.status != ForgetRequest.Status.PENDING:
            raise Conflict(f"The request is {request.status}, not pending.", code="not_pending")
        if request.scope != ForgetRequest.Scope.USER:
            # Listed ids that match nothing stay listed: the receipt names them not found.
            listed = request.memory_ids if request.scope == ForgetRequest.Scope.IDS else []
            request.memory_ids = list(dict.fromkeys([*listed, *preview.ids]))
            request.targets_resolved, request.query = True, ""
        request.preview_approved = preview.record()
        request.status = ForgetRequest.Status.APPROVED
        request.approver = operator.account
        request.approver_label = operator.label
        request.decided_at = timezone.now()
        request.lease_owner, request.lease_expires_at = "", _start_deadline()
        request.save(
            update_fields=[
                "status",
                "approver",
                "approver_label",
                "decided_at",
                "lease_owner",
                "lease_expires_at",
                "memory_ids",
                "targets_resolved",
                "query",
                "preview_approved",
            ]
        )
        _audit(request, "forget_request.approve", previewed=preview.total)
        _enqueue(request.pk)
    return request


def _opened_by(request: ForgetRequest, operator: OperatorPrincipal) -> bool:
    return request.requested_by_type == "operator" and request.requested_by_id == str(
        operator.account.pk
    )


def forget_request_reject(*, request: ForgetRequest, by: Principal, reason: str) -> ForgetRequest:
    """Reject a pending request; its query text (if any) is wiped with it."""
    operator = _require_decider(by, request)
    reason = reason.strip()
    if not reason:
        raise ValidationError("Say why the request is rejected.", code="bad_reason")
    with transaction.atomic():
        request = _locked(request)
        if request.status != ForgetRequest.Status.PENDING:
            raise Conflict(f"The request is {request.status}, not pending.", code="not_pending")
        request.status = ForgetRequest.Status.REJECTED
        request.reason = reason[:2000]
        request.query = ""
        request.approver = operator.account
        request.approver_label = operator.label
        request.decided_at = timezone.now()
        request.save()
        _audit(request, "forget_request.reject")
    return request


def forget_request_retry(*, request: ForgetRequest, by: Principal) -> ForgetRequest:
    """Send a failed request back to approved; its job resumes where it stopped."""
    _require_decider(by, request)
    with transaction.atomic():
        request = _locked(request)
        if request.status != ForgetRequest.Status.FAILED:
            raise Conflict(f"The request is {request.status}, not failed.", code="not_failed")
        request.status = ForgetRequest.Status.APPROVED
        request.retry_count += 1
        request.reason = ""
        request.lease_owner, request.lease_expires_at = "", _start_deadline()
        request.save(
            update_fields=["status", "retry_count", "reason", "lease_owner", "lease_expires_at"]
        )
        _audit(request, "forget_request.retry", retry_count=request.retry_count)
        _enqueue(request.pk)
    return request


def forget_request_resume_stalled(*, now: datetime | None = None) -> list[int]:
    """Re-queue requests whose worker died (running, lease expired) or whose queued message
    may be lost (approved longer than a lease ago). A duplicate message is harmless: a job
    starts only on a request nobody holds a live lease on."""
    now = now or timezone.now()
    stalled = ForgetRequest.objects.filter(
        status__in=[ForgetRequest.Status.APPROVED, ForgetRequest.Status.RUNNING],
        lease_expires_at__lt=now,
    )
    requeued: list[int] = []
    for request in stalled.select_related("tenant", "user"):
        with transaction.atomic():
            _audit(request, "forget_request.resume", status=request.status)
            _enqueue(request.pk)
        requeued.append(request.pk)
    return requeued
