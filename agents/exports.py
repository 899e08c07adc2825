"""agents' sections of the user export (``tenants.exports``): every agents row that carries
the user, as ``agents_user_purge`` deletes them (agents, machines, projects, sessions, tasks and
their transitions, messages the user's agents sent or received, presence, memory files and the
replay ledger's entries)."""

from __future__ import annotations

from typing import Any

from django.db.models import Q
from rest_framework import serializers

from agents.api import serializers as s
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
from agents.selectors import ledger_scope
from atlas_platform.models import LedgerEntry
from tenants.exports import in_batches, register_export
from tenants.models import User


class MachineExportOut(s.MachineOut):
    first_seen_at = serializers.DateTimeField(help_text="First heartbeat or session.")
    last_seen_at = serializers.DateTimeField(help_text="Last heartbeat or session.")


class TaskTransitionExportOut(serializers.Serializer[TaskTransition]):
    task_id = serializers.IntegerField(help_text="The task.")
    agent = serializers.CharField(
        source="agent.slug", allow_null=True, default=None, help_text="Who asked for it."
    )
    from_state = serializers.CharField(help_text="State before.")
    to_state = serializers.CharField(help_text="State asked for.")
    expected_version = serializers.IntegerField(help_text="The version the caller named.")
    result = serializers.CharField(help_text="applied | stale_version | illegal.")
    created_at = serializers.DateTimeField(help_text="When.")


class OperationExportOut(serializers.Serializer[LedgerEntry]):
    operation_id = serializers.CharField(source="key", help_text="The client's operation id.")
    kind = serializers.CharField(source="request", help_text="The operation's kind.")
    state = serializers.SerializerMethodField(help_text="pending | done.")
    status_code = serializers.IntegerField(
        allow_null=True, help_text="Its answer's HTTP status (null while pending)."
    )
    result = serializers.JSONField(
        source="response", allow_null=True, help_text="Its stored answer (replayed to a retry)."
    )
    created_at = serializers.DateTimeField(help_text="When it was first applied.")

    def get_state(self, entry: LedgerEntry) -> str:
        return "pending" if entry.status_code is None else "done"


def _agents(user: User) -> Any:
    return Agent.objects.for_caller(user)


SECTIONS: tuple[tuple[str, Any, type[serializers.Serializer[Any]], str], ...] = (
    (
        "agents",
        lambda user: in_batches(_agents(user)),
        s.AgentOut,
        "The user's registered agents.",
    ),
    (
        "machines",
        lambda user: in_batches(Machine.objects.for_caller(user)),
        MachineExportOut,
        "The machines the user's agents ran on.",
    ),
    (
        "projects",
        lambda user: in_batches(Project.objects.for_caller(user).select_related("user")),
        s.ProjectOut,
        "The user's projects.",
    ),
    (
        "agent_sessions",
        lambda user: in_batches(
            Session.objects.for_caller(user).select_related("agent", "project", "machine")
        ),
        s.SessionOut,
        "The sessions of the user's agents.",
    ),
    (
        "tasks",
        lambda user: in_batches(Task.objects.for_caller(user).select_related("agent", "project")),
        s.TaskOut,
        "The user's tasks.",
    ),
    (
        "task_transitions",
        lambda user: in_batches(TaskTransition.objects.for_caller(user).select_related("agent")),
        TaskTransitionExportOut,
        "Every transition asked of the user's tasks (applied or not).",
    ),
    (
        "agent_messages",
        lambda user: in_batches(
            Message.objects.filter(
                Q(sender__in=_agents(user)) | Q(recipient__in=_agents(user))
            ).select_related("sender__user", "recipient__user")
        ),
        s.MessageOut,
        "Messages the user's agents sent or received.",
    ),
    (
        "presence",
        lambda user: in_batches(
            Presence.objects.for_caller(user).select_related("agent", "machine", "session")
        ),
        s.PresenceOut,
        "The presence of the user's agents per machine.",
    ),
    (
        "memory_files",
        lambda user: in_batches(MemoryFile.objects.for_caller(user).select_related("project")),
        s.MemoryFileOut,
        "The user's synced memory files (their text is in `memories`).",
    ),
    (
        "agent_operations",
        lambda user: in_batches(LedgerEntry.objects.filter(scope=ledger_scope(user))),
        OperationExportOut,
        "The replay ledger: operations applied for the user and their stored answers.",
    ),
)


def register() -> None:
    for name, rows, shape, help_text in SECTIONS:
        register_export(name, rows=rows, shape=shape, help_text=help_text)
