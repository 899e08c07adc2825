"""Reads of the agents domain, with the isolation rules in one place: a user's rows are read
through ``Model.objects.for_caller(user)`` only (``atlas_platform.scoping``: another user's or
tenant's ids are "not found", never "forbidden"), an agent's (an inbox, its sessions, its open
tasks) through the agent ``agent_for_token`` found that way, and a team-visible project
through ``in_callers_tenant``, never beyond the caller's tenant."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django.db.models import Count, QuerySet
from django.db.models.functions import TruncDate
from django.utils import timezone

from agents.models import (
    Agent,
    MemoryFile,
    Message,
    Presence,
    Project,
    Session,
    Task,
)
from atlas_platform.ledger import ledger_answers
from atlas_platform.scoping import missing
from memory.public import memory_get_many
from tenants.capabilities import Capability, capability_require
from tenants.models import PlatformToken, Tenant, User

OPEN_STATES = (Task.State.IN_PROGRESS, Task.State.BLOCKED, Task.State.SUSPENDED)


# --- agents -------------------------------------------------------------------------------
def agent_for_token(*, token: PlatformToken, user: User) -> Agent:
    """The agent a request acts as: the one its token is bound to (never a body's claim).
    A token bound to no agent may read the user's records but not act as an agent."""
    capability_require(token=token, capability=Capability.AGENT, user=user)
    agent = Agent.objects.for_caller(user).filter(slug=token.agent_slug).first()
    if agent is None:
        raise missing("agent", token.agent_slug)
    agent.user = user
    return agent


def agent_list(*, user: User) -> QuerySet[Agent]:
    return Agent.objects.for_caller(user).order_by("slug")


def presence_list(*, user: User) -> QuerySet[Presence]:
    """Every presence row of the user's agents (one per agent and machine)."""
    return (
        Presence.objects.for_caller(user)
        .select_related("agent", "machine", "session")
        .order_by("agent__slug", "machine__key")
    )


# --- projects -----------------------------------------------------------------------------
def project_get(*, user: User, key: str) -> Project:
    """The user's own project with this key, else a team-visible one of the user's tenant."""
    found = Project.objects.for_caller(user).filter(key=key).first() or (
        Project.objects.in_callers_tenant(user)
        .filter(key=key, team_visible=True)
        .order_by("id")
        .first()
    )
    if found is None:
        raise missing("project", key)
    return found


def own_project(*, user: User, key: str) -> Project:
    project = Project.objects.for_caller(user).filter(key=key).first()
    if project is None:
        raise missing("project", key)
    return project


def project_list(*, user: User, include_team: bool = False) -> QuerySet[Project]:
    """The user's projects, and with ``include_team`` the tenant's team-visible ones."""
    projects = Project.objects.for_caller(user)
    if include_team:
        projects |= Project.objects.in_callers_tenant(user).filter(team_visible=True)
    return projects.select_related("user").order_by("name", "id")


# --- sessions -----------------------------------------------------------------------------
def session_get(*, agent: Agent, session_id: str) -> Session:
    session = Session.objects.filter(agent=agent, external_id=session_id)
    found = session.first()
    if found is None:
        raise missing("session", session_id, "of this agent")
    return found


def session_list(
    *, user: User, agent_slug: str | None = None, open_only: bool = False, limit: int = 50
) -> list[Session]:
    sessions = Session.objects.for_caller(user).select_related("agent", "project", "machine")
    if agent_slug:
        sessions = sessions.filter(agent__slug=agent_slug)
    if open_only:
        sessions = sessions.filter(ended_at__isnull=True)
    return list(sessions.order_by("-started_at", "-id")[:limit])


# --- tasks --------------------------------------------------------------------------------
def task_get(*, user: User, task_id: int) -> Task:
    task = Task.objects.for_caller(user).filter(pk=task_id).select_related("agent", "project")
    found = task.first()
    if found is None:
        raise missing("task", task_id)
    return found


def task_list(
    *,
    user: User,
    state: str | None = None,
    project_key: str | None = None,
    limit: int = 50,
) -> list[Task]:
    tasks = Task.objects.for_caller(user).select_related("agent", "project")
    if state:
        tasks = tasks.filter(state=state)
    if project_key:
        tasks = tasks.filter(project__key=project_key)
    return list(tasks.order_by("-updated_at", "-id")[:limit])


def task_current(*, agent: Agent) -> list[Task]:
    """The agent's open tasks (in progress, blocked, suspended), most recently changed first."""
    tasks = Task.objects.filter(agent=agent, state__in=OPEN_STATES)
    return list(tasks.select_related("agent", "project").order_by("-updated_at", "-id"))


# --- messages -----------------------------------------------------------------------------
def inbox(*, agent: Agent, unread_only: bool = False, limit: int = 50) -> list[Message]:
    """The agent's received messages, newest first; ``unread_only``: not yet acknowledged."""
    messages = Message.objects.filter(recipient=agent).select_related(
        "sender__user", "recipient__user"
    )
    if unread_only:
        messages = messages.filter(acknowledged_at__isnull=True)
    return list(messages.order_by("-created_at", "-id")[:limit])


def inbox_message(*, agent: Agent, message_id: int) -> Message:
    """A message of the agent's inbox (anyone else's is "not found")."""
    message = (
        Message.objects.filter(recipient=agent, pk=message_id)
        .select_related("sender__user", "recipient__user")
        .first()
    )
    if message is None:
        raise missing("message", message_id, "in this agent's inbox")
    return message


# --- the tenant dashboard -----------------------------------------------------------------
@dataclass(frozen=True)
class AgentActivity:
    """A tenant's agent activity, for the dashboard."""

    agents: int
    active_agents: int
    sessions_per_day: list[tuple[date, int]]
    tasks_by_state: dict[str, int]


def tenant_activity(*, tenant: Tenant, days: int = 14) -> AgentActivity:
    """Agents of the tenant, those active now, sessions started per day (UTC), tasks by
    state. Four queries."""
    moment = timezone.now()
    presence = Presence.objects.filter(agent__user__tenant=tenant).select_related(None)
    active = {
        p.agent_id
        for p in presence.only("agent_id", "session_id", "last_heartbeat_at")
        if p.status(moment) == "active"
    }
    first = (moment - timedelta(days=days - 1)).date()
    start = datetime.combine(first, time.min, tzinfo=UTC)
    per_day = dict(
        Session.objects.filter(agent__user__tenant=tenant, started_at__gte=start)
        .annotate(day=TruncDate("started_at", tzinfo=UTC))
        .values("day")
        .annotate(n=Count("id"))
        .values_list("day", "n")
    )
    by_state = dict(
        Task.objects.filter(user__tenant=tenant)
        .values("state")
        .annotate(n=Count("id"))
        .values_list("state", "n")
    )
    return AgentActivity(
        agents=Agent.objects.filter(user__tenant=tenant).count(),
        active_agents=len(active),
        sessions_per_day=[
            (day, per_day.get(day, 0)) for day in (first + timedelta(days=n) for n in range(days))
        ],
        tasks_by_state={state: by_state.get(state, 0) for state in Task.State.values},
    )


# --- memory files -------------------------------------------------------------------------
def memory_file_list(*, user: User, project_key: str) -> list[MemoryFile]:
    """The project's memory files (tombstones of deleted ones too), by path."""
    project = own_project(user=user, key=project_key)
    return list(MemoryFile.objects.filter(project=project).order_by("path"))


def memory_file_texts(*, user: User, rows: list[MemoryFile]) -> dict[str, str]:
    """The stored text of each live file's current version, by memory id (the store)."""
    ids = [row.memory_id for row in rows if row.memory_id and not row.deleted]
    return {doc.id: doc.text for doc in memory_get_many(user=user, memory_ids=ids)}


# --- the replay ledger (atlas_platform.ledger) ----------------------------------------------
def ledger_scope(user: User) -> str:
    """Where a user's operation ids are unique in the exactly-once ledger."""
    return f"user:{user.pk}"


def ledger_owner(agent: Agent | None) -> str:
    """Who within the user's scope gets an operation's answer back: the agent that sent it."""
    return f"agent:{agent.pk}" if agent is not None else ""


def applied_operation_results(
    *, user: User, agent: Agent, operation_ids: set[str]
) -> dict[str, dict[str, Any]]:
    """The results of the operations this agent of the user applied with these ids (what a
    later operation's ``$ref`` reads; ``agents.api.refs``): never another agent's."""
    answers = ledger_answers(
        scope=ledger_scope(user), owner=ledger_owner(agent), keys=operation_ids
    )
    return {op_id: result for op_id, result in answers.items() if isinstance(result, dict)}
