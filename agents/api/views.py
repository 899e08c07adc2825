"""The agents REST API under ``/api/v1/users/{user_id}/``: each view parses input and calls one
service or selector.

The acting agent is the one the token is bound to (``agents.selectors.agent_for_token``),
resolved before any handler on the methods that act; a token bound to no agent reads the
user's records but gets 403 ``token_not_bound_to_agent`` where an agent must act.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from agents.api import serializers as s
from agents.api.operations import BatchIn, BatchOut, OperationIn, parse_operation
from agents.api.refs import operations_apply_linked
from agents.api.serializers import CLIENT_ID
from agents.models import Agent
from agents.selectors import (
    agent_for_token,
    agent_list,
    inbox,
    memory_file_list,
    memory_file_texts,
    presence_list,
    project_list,
    session_list,
    task_current,
    task_list,
)
from agents.services.agents import (
    agent_machine_token_issue,
    agent_register,
    presence_heartbeat,
)
from agents.services.messages import message_ack, message_reply, message_send
from agents.services.operations import operations_apply
from agents.services.projects import project_register
from agents.services.sessions import session_end, session_start, session_touch
from agents.services.tasks import task_create, task_transition
from atlas_platform.api import error_body
from atlas_platform.exceptions import ValidationError
from atlas_platform.openapi import IDEMPOTENCY_KEY, READ_ERRORS, WRITE_ERRORS, errors
from atlas_platform.views import UserView, parsed
from tenants.capabilities import Capability, capability_require

TAGS = ["agents"]
ACT_READ = (*READ_ERRORS, 403)
ACT_WRITE = (*WRITE_ERRORS, 403)
SESSION_ID = OpenApiParameter(
    "session_id", str, OpenApiParameter.PATH, description="The agent's own session id."
)
TASK_ID = OpenApiParameter("task_id", int, OpenApiParameter.PATH, description="The task's id.")
AGENT_SLUG = OpenApiParameter(
    "slug", str, OpenApiParameter.PATH, description="The agent's slug (e.g. `claude-code`)."
)
MESSAGE_ID = OpenApiParameter(
    "message_id", int, OpenApiParameter.PATH, description="A message of the agent's inbox."
)


OPERATION_ID = OpenApiParameter(
    "Operation-Id",
    str,
    OpenApiParameter.HEADER,
    required=False,
    pattern=CLIENT_ID,
    description=(
        "A client operation id (1-128 of `A-Za-z0-9._:@-`, unique per user): the write is "
        "applied exactly once; a replay within ATLAS_OPERATION_TTL_DAYS (30 days) answers the "
        "first result with header `Operation-Replayed: true`; the same id with another "
        "payload is 422. The ledger of `POST .../operations`."
    ),
)


class _Answered(Exception):
    """Raised to answer a write that went through the operation ledger."""

    def __init__(self, response: Response) -> None:
        self.response = response


class AgentUserView(UserView):
    """A user's endpoint where some methods act as the token's agent (``self.agent``). A POST
    of a replayable kind (``operation_kind``) with an ``Operation-Id`` header goes through the
    operation ledger instead of its handler: the same service, exactly once."""

    acting_methods: frozenset[str] = frozenset({"POST"})
    operation_kind: str | None = None
    operation_status: int = status.HTTP_200_OK
    agent: Agent

    def resolve(self, **kwargs: Any) -> None:
        super().resolve(**kwargs)
        if self.request.method in self.acting_methods:
            self.agent = agent_for_token(token=self.token, user=self.subject)

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        operation_id = request.headers.get("Operation-Id")
        if operation_id is not None and self.operation_kind and request.method == "POST":
            raise _Answered(self._once(request, operation_id, kwargs))

    def _once(self, request: Request, operation_id: str, path: dict[str, Any]) -> Response:
        if not isinstance(request.data, dict):
            raise ValidationError("The body must be a JSON object.", code="invalid")
        args = {**request.data, **{k: v for k, v in path.items() if k != "user_id"}}
        item = parsed(OperationIn, {"id": operation_id, "op": self.operation_kind, "args": args})
        operation = parse_operation(self.agent, item, status_code=self.operation_status)
        outcome = operations_apply(user=self.subject, operations=[operation], agent=self.agent)[0]
        if outcome.error is not None:
            error = outcome.error
            body = error_body(error["code"], error["message"], error.get("details"))
            return Response(body, status=outcome.status_code)
        replayed = {"Operation-Replayed": "true"} if outcome.status == "duplicate" else {}
        return Response(outcome.result, status=outcome.status_code, headers=replayed)

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, _Answered):
            return exc.response
        return super().handle_exception(exc)


def many(shape: type[serializers.Serializer[Any]], rows: Iterable[Any]) -> list[Any]:
    return [shape(row).data for row in rows]


def _created(created: bool) -> int:
    return status.HTTP_201_CREATED if created else status.HTTP_200_OK


class AgentsView(UserView):
    @extend_schema(
        operation_id="agent_list",
        tags=TAGS,
        responses={200: s.AgentListOut, **errors(*READ_ERRORS)},
    )
    def get(self, request: Request, user_id: str) -> Response:
        """The user's agents."""
        return Response({"results": many(s.AgentOut, agent_list(user=self.subject))})

    @extend_schema(
        operation_id="agent_register",
        tags=TAGS,
        request=s.AgentIn,
        parameters=[IDEMPOTENCY_KEY],
        responses={200: s.AgentOut, 201: s.AgentOut, **errors(*WRITE_ERRORS)},
    )
    def post(self, request: Request, user_id: str) -> Response:
        """Register one of the user's agents (201), or get it back if it exists (200)."""
        done = agent_register(user=self.subject, **parsed(s.AgentIn, request.data))
        return Response(s.AgentOut(done.agent).data, status=_created(done.created))


class AgentTokensView(UserView):
    """Issue a token bound to one of the user's agents, for one machine. The caller needs the
    tenant's provisioning right (a tenant-wide token issued with it): a user's own token never
    mints another (a leaked one could outlive its revocation)."""

    idempotent = False  # the answer holds a secret: never kept in the idempotency ledger

    def resolve(self, **kwargs: Any) -> None:
        capability_require(token=self.token, capability=Capability.PROVISIONING)
        super().resolve(**kwargs)

    @extend_schema(
        operation_id="agent_token_issue",
        tags=TAGS,
        request=s.AgentTokenIn,
        parameters=[AGENT_SLUG],
        responses={201: s.AgentTokenOut, **errors(*WRITE_ERRORS, 403)},
    )
    def post(self, request: Request, user_id: str, slug: str) -> Response:
        """A token bound to the agent `slug` (registered on first use) for one machine: what
        `atlas login` needs. One per machine, so each is revoked alone. Shown once; audited."""
        data = parsed(s.AgentTokenIn, request.data)
        issued = agent_machine_token_issue(user=self.subject, agent_slug=slug, **data)
        body = {
            "token": issued.secret,
            "name": issued.token.name,
            "user": self.subject.external_id,
            "agent": issued.token.agent_slug,
            "expires_at": issued.token.expires_at,
        }
        return Response(
            s.AgentTokenOut(body).data,
            status=status.HTTP_201_CREATED,
            headers={"Cache-Control": "no-store"},
        )


class HeartbeatView(AgentUserView):
    @extend_schema(
        operation_id="agent_heartbeat",
        tags=TAGS,
        request=s.HeartbeatIn,
        parameters=[IDEMPOTENCY_KEY],
        responses={200: s.PresenceOut, **errors(*ACT_WRITE)},
    )
    def post(self, request: Request, user_id: str) -> Response:
        """The token's agent is alive on this machine (server time). One presence row per
        agent and machine, updated in place."""
        presence = presence_heartbeat(agent=self.agent, **parsed(s.HeartbeatIn, request.data))
        return Response(s.PresenceOut(presence).data)


class PresenceView(UserView):
    @extend_schema(
        operation_id="presence_list",
        tags=TAGS,
        responses={200: s.PresenceListOut, **errors(*READ_ERRORS)},
    )
    def get(self, request: Request, user_id: str) -> Response:
        """Where the user's agents are: active, idle or offline, per agent and machine."""
        rows = presence_list(user=self.subject)
        return Response({"results": many(s.PresenceOut, rows)})


class ProjectsView(UserView):
    @extend_schema(
        operation_id="project_list",
        tags=TAGS,
        parameters=[s.ProjectListIn],
        responses={200: s.ProjectListOut, **errors(*READ_ERRORS)},
    )
    def get(self, request: Request, user_id: str) -> Response:
        """The user's projects; with `team=true` also the tenant's team-visible ones."""
        rows = project_list(
            user=self.subject, include_team=parsed(s.ProjectListIn, request.GET)["team"]
        )
        return Response({"results": many(s.ProjectOut, rows)})

    @extend_schema(
        operation_id="project_register",
        tags=TAGS,
        request=s.ProjectIn,
        parameters=[IDEMPOTENCY_KEY],
        responses={200: s.ProjectOut, 201: s.ProjectOut, **errors(*WRITE_ERRORS)},
    )
    def post(self, request: Request, user_id: str) -> Response:
        """Register a code base by its git remote (else its path): two checkouts of one
        repository are one project. 201 when new, 200 when known."""
        done = project_register(user=self.subject, **parsed(s.ProjectIn, request.data))
        return Response(s.ProjectOut(done.project).data, status=_created(done.created))


class SessionsView(AgentUserView):
    operation_kind = "session.start"
    operation_status = status.HTTP_201_CREATED

    @extend_schema(
        operation_id="session_list",
        tags=TAGS,
        parameters=[s.SessionListIn],
        responses={200: s.SessionListOut, **errors(*READ_ERRORS)},
    )
    def get(self, request: Request, user_id: str) -> Response:
        """The user's sessions, newest first (one agent's, or open ones, if asked)."""
        query = parsed(s.SessionListIn, request.GET)
        rows = session_list(
            user=self.subject,
            agent_slug=query.get("agent"),
            open_only=query["open"],
            limit=query["limit"],
        )
        return Response({"results": many(s.SessionOut, rows)})

    @extend_schema(
        operation_id="session_start",
        tags=TAGS,
        request=s.SessionStartIn,
        parameters=[IDEMPOTENCY_KEY, OPERATION_ID],
        responses={200: s.SessionOut, 201: s.SessionOut, **errors(*ACT_WRITE)},
    )
    def post(self, request: Request, user_id: str) -> Response:
        """Start a session of the token's agent, keyed by the agent's own session id: 201
        when new, 200 (the same session) when it was already started."""
        done = session_start(agent=self.agent, **parsed(s.SessionStartIn, request.data))
        return Response(s.SessionOut(done.session).data, status=_created(done.created))


class SessionTouchView(AgentUserView):
    operation_kind = "session.touch"

    @extend_schema(
        operation_id="session_touch",
        tags=TAGS,
        request=s.SessionTouchIn,
        parameters=[SESSION_ID, IDEMPOTENCY_KEY, OPERATION_ID],
        responses={200: s.SessionOut, **errors(*ACT_WRITE)},
    )
    def post(self, request: Request, user_id: str, session_id: str) -> Response:
        """Count turns and writes of an open session, note the files it touched (a hook on
        every turn: counters in place, never a row per turn)."""
        data = parsed(s.SessionTouchIn, request.data)
        session = session_touch(agent=self.agent, session_id=session_id, **data)
        return Response(s.SessionOut(session).data)


class SessionEndView(AgentUserView):
    operation_kind = "session.end"

    @extend_schema(
        operation_id="session_end",
        tags=TAGS,
        request=s.SessionEndIn,
        parameters=[SESSION_ID, IDEMPOTENCY_KEY, OPERATION_ID],
        responses={200: s.SessionOut, **errors(*ACT_WRITE)},
    )
    def post(self, request: Request, user_id: str, session_id: str) -> Response:
        """End a session (ending again is a no-op); a summary becomes an episodic memory of
        the session."""
        data = parsed(s.SessionEndIn, request.data)
        session = session_end(agent=self.agent, session_id=session_id, **data)
        return Response(s.SessionOut(session).data)


class TasksView(AgentUserView):
    operation_kind = "task.create"
    operation_status = status.HTTP_201_CREATED

    @extend_schema(
        operation_id="task_list",
        tags=TAGS,
        parameters=[s.TaskListIn],
        responses={200: s.TaskListOut, **errors(*READ_ERRORS)},
    )
    def get(self, request: Request, user_id: str) -> Response:
        """The user's tasks, most recently changed first (one state or project, if asked)."""
        query = parsed(s.TaskListIn, request.GET)
        rows = task_list(
            user=self.subject,
            state=query.get("state"),
            project_key=query.get("project"),
            limit=query["limit"],
        )
        return Response({"results": many(s.TaskOut, rows)})

    @extend_schema(
        operation_id="task_create",
        tags=TAGS,
        request=s.TaskIn,
        parameters=[IDEMPOTENCY_KEY, OPERATION_ID],
        responses={201: s.TaskOut, **errors(*ACT_WRITE)},
    )
    def post(self, request: Request, user_id: str) -> Response:
        """Create a task of the token's agent (state `created`, version 1)."""
        data = parsed(s.TaskIn, request.data)
        task = task_create(user=self.subject, agent=self.agent, **data)
        return Response(s.TaskOut(task).data, status=status.HTTP_201_CREATED)


class CurrentTasksView(AgentUserView):
    acting_methods = frozenset({"GET"})

    @extend_schema(
        operation_id="task_current",
        tags=TAGS,
        responses={200: s.TaskListOut, **errors(*ACT_READ)},
    )
    def get(self, request: Request, user_id: str) -> Response:
        """The token's agent's open tasks (in progress, blocked, suspended)."""
        return Response({"results": many(s.TaskOut, task_current(agent=self.agent))})


class TaskTransitionView(AgentUserView):
    operation_kind = "task.transition"

    @extend_schema(
        operation_id="task_transition",
        tags=TAGS,
        request=s.TransitionIn,
        parameters=[TASK_ID, IDEMPOTENCY_KEY, OPERATION_ID],
        responses={200: s.TaskOut, **errors(*ACT_WRITE)},
    )
    def post(self, request: Request, user_id: str, task_id: int) -> Response:
        """Move a task through its state machine. Name the version you last saw: a stale
        version or an illegal move is 409 with the current state in `error.details.current`."""
        data = parsed(s.TransitionIn, request.data)
        task = task_transition(user=self.subject, agent=self.agent, task_id=task_id, **data)
        return Response(s.TaskOut(task).data)


class MessagesView(AgentUserView):
    operation_kind = "message.send"
    operation_status = status.HTTP_201_CREATED

    @extend_schema(
        operation_id="message_send",
        tags=TAGS,
        request=s.MessageIn,
        parameters=[IDEMPOTENCY_KEY, OPERATION_ID],
        responses={201: s.MessageOut, **errors(*ACT_WRITE)},
    )
    def post(self, request: Request, user_id: str) -> Response:
        """Send a message from the token's agent to an agent of the same tenant."""
        message = message_send(sender=self.agent, **parsed(s.MessageIn, request.data))
        return Response(s.MessageOut(message).data, status=status.HTTP_201_CREATED)


class InboxView(AgentUserView):
    acting_methods = frozenset({"GET"})

    @extend_schema(
        operation_id="message_inbox",
        tags=TAGS,
        parameters=[s.InboxIn],
        responses={200: s.InboxOut, **errors(*ACT_READ)},
    )
    def get(self, request: Request, user_id: str) -> Response:
        """The token's agent's inbox, newest first (only the recipient's token reads it)."""
        query = parsed(s.InboxIn, request.GET)
        rows = inbox(agent=self.agent, unread_only=query["unread"], limit=query["limit"])
        return Response({"results": many(s.MessageOut, rows)})


class MessageAckView(AgentUserView):
    operation_kind = "message.ack"

    @extend_schema(
        operation_id="message_ack",
        tags=TAGS,
        request=None,
        parameters=[MESSAGE_ID, IDEMPOTENCY_KEY, OPERATION_ID],
        responses={200: s.MessageOut, **errors(*ACT_WRITE)},
    )
    def post(self, request: Request, user_id: str, message_id: int) -> Response:
        """Acknowledge a message of the agent's inbox."""
        return Response(s.MessageOut(message_ack(agent=self.agent, message_id=message_id)).data)


class MessageReplyView(AgentUserView):
    operation_kind = "message.reply"
    operation_status = status.HTTP_201_CREATED

    @extend_schema(
        operation_id="message_reply",
        tags=TAGS,
        request=s.ReplyIn,
        parameters=[MESSAGE_ID, IDEMPOTENCY_KEY, OPERATION_ID],
        responses={201: s.MessageOut, **errors(*ACT_WRITE)},
    )
    def post(self, request: Request, user_id: str, message_id: int) -> Response:
        """Reply to a message of the agent's inbox: to its sender, in its thread."""
        data = parsed(s.ReplyIn, request.data)
        reply = message_reply(agent=self.agent, message_id=message_id, **data)
        return Response(s.MessageOut(reply).data, status=status.HTTP_201_CREATED)


class OperationsView(AgentUserView):
    idempotent = False  # every operation carries its own id: the batch's ledger

    @extend_schema(
        operation_id="operations_apply",
        tags=TAGS,
        request=BatchIn,
        responses={200: BatchOut, **errors(*ACT_WRITE)},
    )
    def post(self, request: Request, user_id: str) -> Response:
        """Replay work done offline: up to ATLAS_OPERATION_BATCH_MAX operations, each with a
        client operation id, each in its own transaction and answered on its own (applied,
        duplicate, conflict, rejected, retry). An id is remembered ATLAS_OPERATION_TTL_DAYS.
        An argument `{"$ref": "<id>", "field": "<name>"}` is that earlier operation's result
        field (this batch's, or one applied before): a task's create and its transition
        travel together. Rate-limited per token in its own scope (ATLAS_RATE_OPERATIONS)."""
        batch = parsed(BatchIn, request.data)["operations"]
        outcomes = operations_apply_linked(agent=self.agent, user=self.subject, items=batch)
        return Response({"results": BatchOut({"results": outcomes}).data["results"]})

    def rate_scope(self, request: Request) -> str:
        return "operations"  # a replayed backlog never spends the interactive writes' budget


class MemoryFilesView(UserView):
    @extend_schema(
        operation_id="memory_file_list",
        tags=TAGS,
        parameters=[s.MemoryFileListIn],
        responses={200: s.MemoryFileListOut, **errors(*READ_ERRORS)},
    )
    def get(self, request: Request, user_id: str) -> Response:
        """A project's synced memory files (tombstones of deleted ones too) with their content
        hashes and versions; with `content=true` each live file's text. Changes go through
        `POST .../operations` (`memory_file.put`, `memory_file.delete`)."""
        query = parsed(s.MemoryFileListIn, request.GET)
        rows = memory_file_list(user=self.subject, project_key=query["project"])
        texts = memory_file_texts(user=self.subject, rows=rows) if query["content"] else {}
        results = []
        for row in rows:
            item = dict(s.MemoryFileOut(row).data)
            if query["content"]:
                item["content"] = texts.get(row.memory_id)
            results.append(item)
        return Response({"results": results})
