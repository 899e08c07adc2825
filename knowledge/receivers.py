"""knowledge's part of an erasure (``tenants.signals.user_data_erasing``)."""

from __future__ import annotations

from typing import Any

from knowledge.models import Entity, HandoffNarration, ReconcileRun
from tenants.models import User


def erase_user_data(*, user: User, whole_user: bool, **kwargs: Any) -> dict[str, int]:
    """A whole user: every entity (with revisions and edges), reconcile run and narration
    record of theirs (their searchable documents were erased from the store by the job, as
    an ``entity`` memory type). Chosen memories only: nothing here holds memory text."""
    if not whole_user:
        return {}
    counts = {
        "knowledge.reconcile_runs": ReconcileRun.objects.for_caller(user).delete()[0],
        "knowledge.narrations": HandoffNarration.objects.for_caller(user).delete()[0],
    }
    _, per_model = Entity.objects.for_caller(user).delete()
    counts["knowledge.entities"] = per_model.get("knowledge.Entity", 0)
    counts["knowledge.revisions"] = per_model.get("knowledge.Revision", 0)
    counts["knowledge.edges"] = per_model.get("knowledge.Edge", 0)
    return counts
