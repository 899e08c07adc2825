"""MCP tools for what a coding agent does in a session: tasks, messages, session history.

Conventions of ``memory/mcp/tools.py``: one ``async def`` per tool, first parameter ``ctx``,
the others ``Annotated[..., Field(description=...)]``, the docstring is the description the
model reads, the body is one ``await call(...)`` of one service or selector in a worker thread.
The user comes from the authenticated request and the acting agent from its token (a token
bound to an agent); never from the arguments. ``HINTS`` are the tools' annotations.

Registration (memory must not import this app): the composition root passes ``TOOLS`` with
their ``HINTS`` to ``atlas_platform.mcp.server.build_server`` (atlas_server/asgi.py).
"""

# No ``from __future__ import annotations``: the MCP SDK builds the JSON schemas from these
# signatures at runtime, Annotated descriptions included.

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field
from rest_framework import serializers

from agents.api import serializers as s
from agents.models import Agent
from agents.selectors import agent_for_token, inbox, session_list, task_current, task_list
from agents.services.messages import message_ack, message_send
from agents.services.tasks import task_create, task_transition
from atlas_platform.mcp.calls import call as platform_call
from atlas_platform.mcp.calls import identity_of
from tenants.models import User


async def call(
    ctx: Context, fn: Callable[[Agent], Any], shape: Callable[[Any], dict[str, Any]]
) -> CallToolResult:
    """Run ``fn(agent)`` through the platform's MCP call (worker thread, the token's actor, domain
    errors as tool errors): ``agent`` is the token's agent (a token bound to none gets a tool
    error)."""
    token = identity_of(ctx).token

    def as_agent(*, user: User) -> Any:
        return fn(agent_for_token(token=token, user=user))

    return await platform_call(ctx, as_agent, shape)


async def call_for_user(
    ctx: Context, fn: Callable[[User], Any], shape: Callable[[Any], dict[str, Any]]
) -> CallToolResult:
    """``call`` for reads of the user's records, which any token of the user may make."""

    def as_user(*, user: User) -> Any:
        return fn(user)

    return await platform_call(ctx, as_user, shape)


def _one(shape: type[serializers.Serializer[Any]], key: str) -> Callable[[Any], dict[str, Any]]:
    return lambda value: {key: dict(shape(value).data)}


def _many(shape: type[serializers.Serializer[Any]], key: str) -> Callable[[Any], dict[str, Any]]:
    return lambda rows: {key: [dict(shape(row).data) for row in rows]}


TaskId = Annotated[int, Field(ge=1, description="A task id, as returned by create_task.")]
MessageId = Annotated[int, Field(ge=1, description="A message id from read_inbox.")]
Priority = Literal["low", "normal", "high", "urgent"]
State = Literal[
    "created", "in_progress", "blocked", "suspended", "completed", "failed", "cancelled"
]


async def create_task(
    ctx: Context,
    title: Annotated[str, Field(max_length=300, description="What is to be done, in one line.")],
    description: Annotated[
        str, Field(max_length=20_000, description="Details: context, acceptance criteria.")
    ] = "",
    priority: Annotated[Priority, Field(description="How urgent it is.")] = "normal",
    tags: Annotated[
        list[str] | None, Field(max_length=50, description="Free labels, e.g. the area of code.")
    ] = None,
    parent_id: Annotated[
        int | None, Field(ge=1, description="The task this one is a step of, if any.")
    ] = None,
    project_key: Annotated[
        str | None,
        Field(pattern=r"^[0-9a-f]{64}$", description="The project's key, if it is registered."),
    ] = None,
) -> CallToolResult:
    """Create a task for yourself (state `created`, version 1) when you take on a piece of work
    that outlives this turn, so it survives the session and other machines see it. Move it with
    update_task; do not create a task for what you finish right away."""
    return await call(
        ctx,
        lambda agent: task_create(
            user=agent.user,
            agent=agent,
            title=title,
            description=description,
            priority=priority,
            tags=tags or [],
            parent_id=parent_id,
            project_key=project_key,
        ),
        _one(s.TaskOut, "task"),
    )


async def update_task(
    ctx: Context,
    task_id: TaskId,
    to_state: Annotated[
        State,
        Field(
            description="created -> in_progress <-> blocked / suspended -> completed / failed / "
            "cancelled. Finished tasks never move again."
        ),
    ],
    expected_version: Annotated[
        int,
        Field(
            ge=1,
            description="The task's version as you last saw it. If it changed (another session "
            "or machine moved the task) the update is refused with the current state: read it, "
            "then decide again.",
        ),
    ],
    outcome: Annotated[
        str | None,
        Field(max_length=20_000, description="What came of it, when completing or failing."),
    ] = None,
) -> CallToolResult:
    """Move one of the user's tasks to a new state: start it, block or suspend it, complete,
    fail or cancel it. Name the version you last saw; a stale version or an illegal move is
    refused with the task's current state and nothing changes."""
    return await call(
        ctx,
        lambda agent: task_transition(
            user=agent.user,
            agent=agent,
            task_id=task_id,
            to_state=to_state,
            expected_version=expected_version,
            outcome=outcome,
        ),
        _one(s.TaskOut, "task"),
    )


async def list_tasks(
    ctx: Context,
    mine_open: Annotated[
        bool,
        Field(
            description="true: only your own open tasks (in progress, blocked, suspended), the "
            "place to start a session. false: the user's tasks of every agent."
        ),
    ] = True,
    state: Annotated[
        State | None, Field(description="With mine_open false: only tasks in this state.")
    ] = None,
    limit: Annotated[int, Field(ge=1, le=200, description="At most this many.")] = 50,
) -> CallToolResult:
    """List tasks, most recently changed first, with their versions (needed by update_task).
    Call it at the start of a session to pick up where you or another machine left off."""
    if mine_open:
        return await call(ctx, lambda agent: task_current(agent=agent), _many(s.TaskOut, "tasks"))
    return await call_for_user(
        ctx, lambda user: task_list(user=user, state=state, limit=limit), _many(s.TaskOut, "tasks")
    )


async def send_message(
    ctx: Context,
    to_agent: Annotated[
        str,
        Field(
            pattern=r"^[a-z0-9](?:[a-z0-9-]{0,48}[a-z0-9])?$",
            description="The recipient agent's slug, e.g. `codex`.",
        ),
    ],
    body: Annotated[str, Field(min_length=1, description="The message, self-contained.")],
    to_user: Annotated[
        str | None,
        Field(description="The recipient's user in this tenant (default: the same user)."),
    ] = None,
    kind: Annotated[
        Literal["note", "question", "answer", "handoff", "alert"],
        Field(description="handoff: work you pass on; question: you need an answer."),
    ] = "note",
    priority: Annotated[Priority, Field(description="How urgent it is.")] = "normal",
    subject: Annotated[str, Field(max_length=300, description="A subject line.")] = "",
    tags: Annotated[list[str] | None, Field(max_length=50, description="Free labels.")] = None,
) -> CallToolResult:
    """Send a message to another agent of this tenant (the user's other agents, or a
    colleague's), e.g. to hand off work or ask a question. It waits in their inbox."""
    return await call(
        ctx,
        lambda agent: message_send(
            sender=agent,
            to_agent=to_agent,
            body=body,
            to_user=to_user,
            kind=kind,
            priority=priority,
            subject=subject,
            tags=tags or [],
        ),
        _one(s.MessageOut, "message"),
    )


async def read_inbox(
    ctx: Context,
    unread_only: Annotated[
        bool, Field(description="Only messages you have not acknowledged yet.")
    ] = True,
    limit: Annotated[int, Field(ge=1, le=200, description="At most this many.")] = 20,
) -> CallToolResult:
    """Read your inbox, newest first. Check it at the start of a session; acknowledge each
    message you have handled with ack_message so it is not read again."""
    return await call(
        ctx,
        lambda agent: inbox(agent=agent, unread_only=unread_only, limit=limit),
        _many(s.MessageOut, "messages"),
    )


async def ack_message(ctx: Context, message_id: MessageId) -> CallToolResult:
    """Acknowledge a message of your inbox once you have handled it (again: no change)."""
    return await call(
        ctx,
        lambda agent: message_ack(agent=agent, message_id=message_id),
        _one(s.MessageOut, "message"),
    )


async def session_history(
    ctx: Context,
    agent: Annotated[
        str | None,
        Field(
            pattern=r"^[a-z0-9](?:[a-z0-9-]{0,48}[a-z0-9])?$",
            description="Only this agent's sessions (default: every agent of the user).",
        ),
    ] = None,
    limit: Annotated[int, Field(ge=1, le=200, description="At most this many.")] = 20,
) -> CallToolResult:
    """The user's recent sessions, newest first: when, on which project, how many turns and
    writes, which files, how each ended. Use it to see what happened before this session."""
    return await call_for_user(
        ctx,
        lambda user: session_list(user=user, agent_slug=agent, limit=limit),
        _many(s.SessionOut, "sessions"),
    )


TOOLS: list[Callable[..., Awaitable[CallToolResult]]] = [
    create_task,
    update_task,
    list_tasks,
    send_message,
    read_inbox,
    ack_message,
    session_history,
]

HINTS = {
    "create_task": ToolAnnotations(
        title="Create a task", destructive_hint=False, idempotent_hint=False
    ),
    "update_task": ToolAnnotations(
        title="Move a task to a new state", destructive_hint=False, idempotent_hint=False
    ),
    "list_tasks": ToolAnnotations(title="List tasks", read_only_hint=True, open_world_hint=False),
    "send_message": ToolAnnotations(
        title="Message another agent", destructive_hint=False, idempotent_hint=False
    ),
    "read_inbox": ToolAnnotations(
        title="Read the inbox", read_only_hint=True, open_world_hint=False
    ),
    "ack_message": ToolAnnotations(
        title="Acknowledge a message", destructive_hint=False, idempotent_hint=True
    ),
    "session_history": ToolAnnotations(
        title="Session history", read_only_hint=True, open_world_hint=False
    ),
}
