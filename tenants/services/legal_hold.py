"""Legal holds: an operator pauses every retention deletion of one user's data (their
episodes, the audit events about them) until the hold is released. Each is audited."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from atlas_platform.context import current_actor
from atlas_platform.exceptions import Conflict
from tenants.models import User
from tenants.services.audit import audit_record


def user_legal_hold_place(*, user: User) -> User:
    """Put the user under a legal hold (who placed it: the acting operator)."""
    with transaction.atomic():
        user = User.objects.select_for_update().select_related("tenant").get(pk=user.pk)
        if user.legal_hold_at is not None:
            raise Conflict("The user is already under a legal hold.", code="already_held")
        user.legal_hold_at = timezone.now()
        user.legal_hold_by = current_actor().label[:200]
        user.save(update_fields=["legal_hold_at", "legal_hold_by"])
        audit_record(
            action="user.legal_hold_place", tenant=user.tenant, subject_user=user, target=user
        )
    return user


def user_legal_hold_release(*, user: User) -> User:
    """Release the user's legal hold; retention applies to them again from its next run."""
    with transaction.atomic():
        user = User.objects.select_for_update().select_related("tenant").get(pk=user.pk)
        if user.legal_hold_at is None:
            raise Conflict("The user is not under a legal hold.", code="not_held")
        since = user.legal_hold_at
        user.legal_hold_at, user.legal_hold_by = None, ""
        user.save(update_fields=["legal_hold_at", "legal_hold_by"])
        audit_record(
            action="user.legal_hold_release",
            tenant=user.tenant,
            subject_user=user,
            target=user,
            metadata={"held_since": since.isoformat()},
        )
    return user
