"""The per-user watermark, episode counter and lease (``atlas_platform.leases``: a DB lease with
an expiry, so it works on every database and a dead worker frees its user after
``ATLAS_CONSOLIDATION_LEASE_S``)."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import F

from atlas_platform.exceptions import Conflict
from atlas_platform.leases import Lease
from consolidation.models import ConsolidationState
from tenants.models import User

RUN_LEASE = Lease(holder="lease_run_id", until="lease_until", seconds="ATLAS_CONSOLIDATION_LEASE_S")


def check_active(user: User) -> None:
    """A disabled user or a suspended tenant is not consolidated."""
    if user.status != User.Status.ACTIVE or not user.tenant.is_active:
        raise Conflict(
            "The user is disabled or the tenant suspended: not consolidated.",
            code="consolidation_inactive",
        )


def state_for(user: User) -> ConsolidationState:
    """The user's state row, created on first use (safe against a concurrent creator)."""
    try:
        with transaction.atomic():
            state, _ = ConsolidationState.objects.get_or_create(user=user)
    except IntegrityError:
        state = ConsolidationState.objects.get(user=user)
    return state


def episode_count_bump(user: User) -> int:
    """Count one more episode since the watermark; returns the new count."""
    rows = ConsolidationState.objects.filter(user=user)
    if not rows.update(pending_episodes=F("pending_episodes") + 1):
        state_for(user)
        rows.update(pending_episodes=F("pending_episodes") + 1)
    return int(rows.values_list("pending_episodes", flat=True)[0])


def lease_acquire(*, user: User, run_id: int) -> bool:
    """Take the user's lease for ``run_id`` unless a live lease holds it (even one of the same
    run: a task delivered twice must not run twice at once)."""
    state_for(user)
    return RUN_LEASE.take(ConsolidationState.objects.filter(user=user), holder=run_id)


def lease_release(*, user: User, run_id: int) -> None:
    RUN_LEASE.release(ConsolidationState.objects.filter(user=user), holder=run_id)


def lease_is_live(*, user: User, run_id: int) -> bool:
    return RUN_LEASE.held(ConsolidationState.objects.filter(user=user), holder=run_id)
