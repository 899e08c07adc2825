"""Erasure of a user's agent records (called by the erasure job with the user's memories)."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Q

from agents.models import (
    Agent,
    Machine,
    MemoryFile,
    Message,
    Presence,
    Project,
    Session,
    Task,
    TaskTransition,
)
from tenants.models import User
from tenants.services.audit import audit_record


def agents_user_purge(*, user: User) -> dict[str, int]:
    """Delete every agents row of the user in one transaction: agents, machines, presence,
    projects, sessions, tasks and their transitions, messages the user's agents sent or
    received, and memory files (the erasure job purges the user's operations from the
    exactly-once ledger itself). Returns the counts; the audit event holds counts only."""
    with transaction.atomic():
        agents = Agent.objects.for_caller(user)
        counts = {
            "messages": Message.objects.filter(
                Q(sender__in=agents) | Q(recipient__in=agents)
            ).delete()[0],
            "task_transitions": TaskTransition.objects.for_caller(user).delete()[0],
            "tasks": Task.objects.for_caller(user).delete()[0],
            "presence": Presence.objects.filter(agent__in=agents).delete()[0],
            "sessions": Session.objects.filter(agent__in=agents).delete()[0],
            "memory_files": MemoryFile.objects.for_caller(user).delete()[0],
            "projects": Project.objects.for_caller(user).delete()[0],
            "machines": Machine.objects.for_caller(user).delete()[0],
            "agents": agents.delete()[0],
        }
        audit_record(
            action="agents.user_purge", tenant=user.tenant, subject_user=user, metadata=counts
        )
    return counts
