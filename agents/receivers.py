"""agents' part of an erasure (``tenants.signals.user_data_erasing``)."""

from __future__ import annotations

from typing import Any

from agents.models import AppliedOperation
from agents.services.purge import agents_user_purge
from tenants.models import User


def erase_user_data(*, user: User, whole_user: bool, **kwargs: Any) -> dict[str, int]:
    """A whole user: every agents row of theirs. Chosen memories only: the replay ledger, whose
    stored results may hold the erased text (the way the idempotency ledger is purged)."""
    if whole_user:
        return {f"agents.{table}": n for table, n in agents_user_purge(user=user).items()}
    deleted, _ = AppliedOperation.objects.for_caller(user).delete()
    return {"agents.operations": deleted}
