"""Reads of the tenants domain that carry a rule (which user a token may name, key health)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import NoReturn

from django.conf import settings
from django.db.models import Count, Q
from django.utils import timezone

from atlas_platform.exceptions import NotFound, PermissionDenied, ValidationError
from tenants.models import EXTERNAL_ID_VALIDATOR, PlatformToken, ScopedKey, Tenant, User


def _some_users_id(external_id: str) -> None:
    """404 for what can never be a user's id (a NUL byte, which PostgreSQL cannot even
    compare, among others), before any query."""
    if not re.fullmatch(EXTERNAL_ID_VALIDATOR.regex, external_id):
        raise NotFound("No such user in this tenant.", code="user_not_found")


def user_for_token(*, token: PlatformToken, external_id: str) -> User:
    """The user a token names by external id, within the token's own tenant.

    A user-scoped token may only name its own user; a tenant token any active user of its
    tenant. Another tenant's id is "not found" (never "forbidden"), so ids do not leak; a
    disabled user of the token's own tenant is ``user_disabled`` (403), since the caller
    provisioned them and must know why the call fails.
    """
    _some_users_id(external_id)
    if token.user_id is not None:
        # A user-scoped token can only ever name its own user, loaded with the token already.
        own = token.user
        if own is not None and own.external_id == external_id and own.status == User.Status.ACTIVE:
            own.tenant = token.tenant
            return own
        raise NotFound(
            f"This token acts for one user only and cannot name {external_id!r}.",
            code="user_not_found",
        )
    user = (
        User.objects.select_related("tenant")
        .filter(tenant_id=token.tenant_id, external_id=external_id)
        .first()
    )
    if user is None:
        raise NotFound(f"No user {external_id!r} in this tenant.", code="user_not_found")
    if user.status != User.Status.ACTIVE:
        raise_disabled(user)
    return user


def tenant_user(*, tenant_id: int, external_id: str) -> User:
    """A user of the tenant by external id, in any status, keys prefetched (404 otherwise)."""
    _some_users_id(external_id)
    user = (
        User.objects.select_related("tenant")
        .prefetch_related("scoped_keys")
        .filter(tenant_id=tenant_id, external_id=external_id)
        .first()
    )
    if user is None:
        raise NotFound(f"No user {external_id!r} in this tenant.", code="user_not_found")
    return user


def raise_disabled(user: User) -> NoReturn:
    raise PermissionDenied(
        f"User {user.external_id!r} is disabled; enable them again (POST "
        f"/api/v1/users/{user.external_id}/enable or the admin) to act for them.",
        code="user_disabled",
    )


@dataclass(frozen=True)
class UserPage:
    users: list[User]
    next_cursor: str | None


MAX_USER_PAGE = 200


def user_page(
    *, tenant: Tenant, status: str | None = None, after: str | None = None, limit: int = 50
) -> UserPage:
    """The tenant's users in external-id order, a page at a time (``after``: the last external
    id of the previous page), optionally only ``active`` or ``disabled`` ones. One query."""
    if not 1 <= limit <= MAX_USER_PAGE:
        raise ValidationError(f"limit must be 1 to {MAX_USER_PAGE}.", code="bad_limit")
    users = User.objects.filter(tenant=tenant).order_by("external_id")
    if status is not None:
        users = users.filter(status=status)
    if after:
        users = users.filter(external_id__gt=after)
    rows = list(users.prefetch_related("scoped_keys").select_related("tenant")[: limit + 1])
    more = len(rows) > limit
    rows = rows[:limit]
    return UserPage(users=rows, next_cursor=rows[-1].external_id if more else None)


@dataclass(frozen=True)
class KeyStatus:
    """What an operator needs to know about a user's cluster key."""

    state: str  # "active" | "stale" | "missing" | "pending_invalidation"
    age: timedelta | None
    last_rotated_at: str | None
    key_id: str | None

    @property
    def state_label(self) -> str:
        """The state in words, as every admin page shows it ("pending invalidation")."""
        return self.state.replace("_", " ")

    @property
    def label(self) -> str:
        if self.age is None:
            return {"missing": "no key"}.get(self.state, self.state)
        return f"{self.state}, {self.age.days} d old"


@dataclass(frozen=True)
class KeyLifetime:
    """How long a scoped key lives: the deployment's settings, the one source shown everywhere
    (``ATLAS_SCOPED_KEY_TTL_DAYS``, ``ATLAS_SCOPED_KEY_RENEW_DAYS``)."""

    ttl_days: float
    renew_days: float

    @property
    def renew_after(self) -> timedelta:
        """A key older than this is due: the hourly beat renews it (older still: overdue)."""
        return timedelta(days=self.ttl_days - self.renew_days)

    @property
    def label(self) -> str:
        return (
            f"keys expire after {self.ttl_days:g} days and are renewed hourly from "
            f"{self.ttl_days - self.renew_days:g} days of age"
        )


def key_lifetime() -> KeyLifetime:
    return KeyLifetime(settings.ATLAS_SCOPED_KEY_TTL_DAYS, settings.ATLAS_SCOPED_KEY_RENEW_DAYS)


# An hour of slack past the renewal age before a key shows as stale: the beat runs hourly.
RENEWAL_SLACK = timedelta(hours=1)


def user_key_status(*, user: User) -> KeyStatus:
    """Key health from the user's prefetched keys (no extra queries when prefetched)."""
    keys = list(user.scoped_keys.all())
    active = next((k for k in keys if k.status == ScopedKey.Status.ACTIVE), None)
    pending = any(k.status == ScopedKey.Status.PENDING_INVALIDATION for k in keys)
    if active is None:
        return KeyStatus("missing", None, None, None)
    age = timezone.now() - active.created_at
    rotated = active.created_at.isoformat(timespec="minutes") if active.rotated_from_id else None
    if pending:
        state = "pending_invalidation"
    elif age > key_lifetime().renew_after + RENEWAL_SLACK:
        state = "stale"  # the renewal is overdue (beat not running, or the cluster refused)
    else:
        state = "active"
    return KeyStatus(state, age, rotated, active.key_id)


def tenant_key_ages(*, tenant: Tenant) -> list[tuple[User, KeyStatus]]:
    """Every user of the tenant with their key's health, oldest key first (missing keys last);
    ``stale`` means its renewal is overdue (``key_lifetime``). Two queries."""
    users = User.objects.filter(tenant=tenant).select_related("tenant")
    rows = [(user, user_key_status(user=user)) for user in users.prefetch_related("scoped_keys")]
    return sorted(rows, key=lambda row: -(row[1].age or timedelta(-1)).total_seconds())


@dataclass(frozen=True)
class KeyHealth:
    users: int
    keyed: int  # users with an active key
    stale: int  # ... whose renewal is overdue (``key_lifetime``)
    pending: int  # users with a key pending invalidation


def key_health_by_tenant(*, tenants: Sequence[Tenant]) -> dict[int, KeyHealth]:
    """Each tenant's users and the state of their scoped keys, by tenant pk, in one query."""
    cutoff = timezone.now() - key_lifetime().renew_after - RENEWAL_SLACK
    active = Q(scoped_keys__status=ScopedKey.Status.ACTIVE)
    pending = Q(scoped_keys__status=ScopedKey.Status.PENDING_INVALIDATION)
    rows = (
        User.objects.filter(tenant__in=[t.pk for t in tenants])
        .values("tenant_id")
        .annotate(
            users=Count("id", distinct=True),
            keyed=Count("id", filter=active, distinct=True),
            stale=Count("id", filter=active & Q(scoped_keys__created_at__lt=cutoff), distinct=True),
            pending=Count("id", filter=pending, distinct=True),
        )
    )
    health = {
        row["tenant_id"]: KeyHealth(row["users"], row["keyed"], row["stale"], row["pending"])
        for row in rows
    }
    return {t.pk: health.get(t.pk, KeyHealth(0, 0, 0, 0)) for t in tenants}
