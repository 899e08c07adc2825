"""Lease: take (free or expired only), hold, release, expiry; on a real model's fields."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from atlas_platform.leases import Lease
from consolidation.models import ConsolidationRun, ConsolidationState
from tenants.models import User

LEASE = Lease(holder="lease_run_id", until="lease_until", seconds="ATLAS_CONSOLIDATION_LEASE_S")


@pytest.fixture
def rows(alice: User) -> Any:
    ConsolidationState.objects.create(user=alice)
    return ConsolidationState.objects.filter(user=alice)


def _run(user: User) -> int:
    return int(
        ConsolidationRun.objects.create(tenant_id=user.tenant_id, user=user, trigger="api").pk
    )


def test_a_free_lease_is_taken_once_and_a_live_one_refuses_everyone(rows: Any, alice: User) -> None:
    first = _run(alice)

    assert LEASE.take(rows, holder=first)
    assert not LEASE.take(rows, holder=first)  # not even its own holder twice
    assert LEASE.held(rows, holder=first) and LEASE.is_live(rows.get())


def test_an_expired_lease_is_taken_over(rows: Any, alice: User) -> None:
    first = _run(alice)
    LEASE.take(rows, holder=first)
    rows.update(lease_until=timezone.now() - timedelta(seconds=1))
    ConsolidationRun.objects.filter(pk=first).update(status="done")
    second = _run(alice)

    assert not LEASE.held(rows, holder=first) and not LEASE.is_live(rows.get())
    assert LEASE.take(rows, holder=second) and LEASE.held(rows, holder=second)


def test_only_the_holder_releases_and_the_deadline_follows_the_setting(
    rows: Any, alice: User, settings: Any
) -> None:
    settings.ATLAS_CONSOLIDATION_LEASE_S = 120
    first = _run(alice)
    LEASE.take(rows, holder=first)

    LEASE.release(rows, holder=first + 1000)
    assert LEASE.held(rows, holder=first)
    LEASE.release(rows, holder=first)
    state = rows.get()
    assert state.lease_run_id is None and state.lease_until is None
    left = (LEASE.deadline() - timezone.now()).total_seconds()
    assert 119 <= left <= 120
