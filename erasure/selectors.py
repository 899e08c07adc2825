"""Reads of forget requests that carry a rule."""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import Count

from atlas_platform.exceptions import NotFound
from erasure.models import ForgetRequest
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


def open_forget_request_counts(*, tenants: Sequence[Tenant]) -> dict[int, int]:
    """Requests not done (``OPEN_STATUSES``) of each tenant, by tenant pk, in one query."""
    rows = (
        ForgetRequest.objects.filter(tenant__in=[t.pk for t in tenants], status__in=OPEN_STATUSES)
        .values("tenant_id")
        .annotate(n=Count("id"))
    )
    counts = {row["tenant_id"]: row["n"] for row in rows}
    return {t.pk: counts.get(t.pk, 0) for t in tenants}
