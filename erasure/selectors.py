"""Reads of forget requests that carry a rule."""

from __future__ import annotations

from django.db.models import Count

from atlas_platform.exceptions import NotFound
from erasure.models import ForgetRequest
from memory.public import PERSONAL_TYPES, memory_remaining_count
from tenants.models import Tenant, User


def forget_request_for_user(*, user: User, request_id: int) -> ForgetRequest:
    """One of the user's own forget requests (another user's or tenant's is "not found")."""
    found = (
        ForgetRequest.objects.prefetch_related("progress")
        .filter(pk=request_id, tenant_id=user.tenant_id, user=user)
        .first()
    )
    if found is None:
        raise NotFound(
            f"No forget request {request_id} for this user.", code="forget_request_not_found"
        )
    return found


def forget_requests_for_user(
    *, user: User, after: int | None = None, limit: int = 50
) -> tuple[list[ForgetRequest], int | None]:
    """The user's forget requests, newest first, a page at a time (``after``: the last id of
    the previous page); the next page's cursor, or None at the end. Two queries."""
    rows = ForgetRequest.objects.filter(tenant_id=user.tenant_id, user=user).order_by("-pk")
    if after is not None:
        rows = rows.filter(pk__lt=after)
    page = list(rows.prefetch_related("progress")[: limit + 1])
    more = len(page) > limit
    page = page[:limit]
    return page, (page[-1].pk if more else None)


def forget_request_preview(*, request: ForgetRequest) -> dict[str, int] | None:
    """What approving would erase, per index (memory type): counts only, never text, so a
    reviewer who may not read the memories can still see the size of the decision. None for
    a query scope (its matches are resolved by the job, which reads the texts)."""
    user = request.user
    if request.scope == ForgetRequest.Scope.QUERY or user is None:
        return None
    among = list(request.memory_ids) if request.scope == ForgetRequest.Scope.IDS else None
    owner = {"tenant_id": user.memory_tenant_id, "user_id": user.memory_id}
    return {
        kind: memory_remaining_count(**owner, memory_type=kind, among=among)
        for kind in PERSONAL_TYPES
    }


OPEN_STATUSES = (
    ForgetRequest.Status.PENDING,
    ForgetRequest.Status.APPROVED,
    ForgetRequest.Status.RUNNING,
    ForgetRequest.Status.FAILED,
)


def open_forget_requests(*, tenant: Tenant, limit: int = 20) -> list[ForgetRequest]:
    """The tenant's requests still needing someone (pending, queued, running, failed), oldest
    first, with their users."""
    return list(
        ForgetRequest.objects.filter(tenant=tenant, status__in=OPEN_STATUSES)
        .select_related("user")
        .order_by("created_at")[:limit]
    )


def forget_request_counts(*, tenant: Tenant) -> dict[str, int]:
    """Requests per status (every status present, zero included)."""
    counts = dict.fromkeys(ForgetRequest.Status.values, 0)
    rows = ForgetRequest.objects.filter(tenant=tenant).values("status").annotate(n=Count("id"))
    counts.update({row["status"]: row["n"] for row in rows})
    return counts
