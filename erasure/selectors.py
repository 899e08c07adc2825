"""Reads of forget requests that carry a rule."""

from __future__ import annotations

from atlas_platform.exceptions import NotFound
from erasure.models import ForgetRequest
from tenants.models import User


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
