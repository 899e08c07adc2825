"""agents' part of an erasure (``tenants.signals.user_data_erasing``)."""

from __future__ import annotations

from typing import Any

from agents.services.purge import agents_user_purge
from tenants.models import User


def erase_user_data(*, user: User, whole_user: bool, **kwargs: Any) -> dict[str, int]:
    """A whole user: every agents row of theirs. Chosen memories only: nothing here (the
    operations' stored results, which may hold the erased text, are in the exactly-once ledger,
    which every erasure purges itself)."""
    if whole_user:
        return {f"agents.{table}": n for table, n in agents_user_purge(user=user).items()}
    return {}
