"""The operations the batch endpoint replays: each kind's input shape, the one service it calls
and its output shape. Liveness (heartbeats) is not replayable: an old heartbeat says nothing."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from rest_framework import serializers

from agents.api import serializers as s
from agents.models import Agent
from agents.services.memory_files import memory_file_delete, memory_file_put
from agents.services.messages import message_ack, message_reply, message_send
from agents.services.notes import agent_memory_forget, agent_memory_write
from agents.services.operations import Block, Operation, payload_hash
from agents.services.projects import project_register
from agents.services.sessions import (
    session_checkpoint,
    session_end,
    session_start,
    session_touch,
)
from agents.services.tasks import task_create, task_transition
from atlas_platform.exceptions import ValidationError
from memory.public import memory_writes_together

Run = Callable[[Agent, dict[str, Any]], dict[str, Any]]


class SessionTouchOp(s.SessionTouchIn):
    session_id = s._id("The agent's session id.")


class SessionEndOp(s.SessionEndIn):
    session_id = s._id("The agent's session id.")


class TransitionOp(s.TransitionIn):
    task_id = s._pk("The task.")


class MessageRefOp(s.Input):
    message_id = s._pk("A message of the agent's inbox.")


class ReplyOp(s.ReplyIn):
    message_id = s._pk("A message of the agent's inbox.")


def _out(shape: type[serializers.Serializer[Any]], value: Any) -> dict[str, Any]:
    return dict(shape(value).data)


def _session_end(agent: Agent, a: dict[str, Any]) -> dict[str, Any]:
    return _out(s.SessionOut, session_end(agent=agent, **a))


def _transition(agent: Agent, a: dict[str, Any]) -> dict[str, Any]:
    task = task_transition(user=agent.user, agent=agent, **a)
    return _out(s.TaskOut, task)


def _plain_write(args: dict[str, Any]) -> str | None:
    """A memory write that reads nothing from the store (no ``supersedes``) is written with
    its neighbours in the batch: its text, embedded with theirs."""
    return None if args.get("supersedes") else str(args.get("text") or "")


def _no_none(args: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in args.items() if v is not None}


def _alone(args: dict[str, Any]) -> str | None:
    return None


@dataclass(frozen=True)
class Kind:
    """An operation kind: its input shape, its run, whether it writes to the store, and how a
    run of consecutive ones is written as one batch: ``block`` (given the texts to embed
    together, the block they are applied in: ``memory_writes_together``,
    ``searchable_writes_together``) and ``together`` (an operation's text for it, None: this
    one is applied alone)."""

    shape: type[serializers.Serializer[Any]]
    run: Run
    touches_store: Callable[[dict[str, Any]], bool] = lambda args: False
    together: Callable[[dict[str, Any]], str | None] = _alone
    block: Block | None = None
    prepare: Callable[[Agent, Sequence[dict[str, Any]]], None] | None = None


KINDS: dict[str, Kind] = {
    "session.start": Kind(
        s.SessionStartIn, lambda ag, a: _out(s.SessionOut, session_start(agent=ag, **a).session)
    ),
    "session.touch": Kind(
        SessionTouchOp, lambda ag, a: _out(s.SessionOut, session_touch(agent=ag, **a))
    ),
    "session.end": Kind(SessionEndOp, _session_end, lambda a: bool(a.get("summary"))),
    "session.checkpoint": Kind(
        s.SessionCheckpointIn,
        lambda ag, a: _out(s.SessionCheckpointOut, session_checkpoint(agent=ag, **a)),
        lambda a: True,
    ),
    "task.create": Kind(
        s.TaskIn, lambda ag, a: _out(s.TaskOut, task_create(user=ag.user, agent=ag, **a))
    ),
    "task.transition": Kind(TransitionOp, _transition),
    "message.send": Kind(
        s.MessageIn, lambda ag, a: _out(s.MessageOut, message_send(sender=ag, **a))
    ),
    "message.ack": Kind(MessageRefOp, lambda ag, a: _out(s.MessageOut, message_ack(agent=ag, **a))),
    "message.reply": Kind(ReplyOp, lambda ag, a: _out(s.MessageOut, message_reply(agent=ag, **a))),
    "project.register": Kind(
        s.ProjectIn,
        lambda ag, a: _out(s.ProjectOut, project_register(user=ag.user, **a).project),
    ),
    "memory.write": Kind(
        s.MemoryNoteIn,
        lambda ag, a: _out(s.MemoryRefOut, agent_memory_write(agent=ag, **a)),
        lambda a: True,
        together=_plain_write,
        block=memory_writes_together,
    ),
    "memory.forget": Kind(
        s.MemoryForgetIn,
        lambda ag, a: _out(s.MemoryForgetOut, agent_memory_forget(agent=ag, **a)),
        lambda a: True,
    ),
    "memory_file.put": Kind(
        s.MemoryFilePutIn,
        lambda ag, a: _out(s.MemoryFileOut, memory_file_put(agent=ag, **_no_none(a))),
        lambda a: True,
    ),
    "memory_file.delete": Kind(
        s.MemoryFileDeleteIn,
        lambda ag, a: _out(s.MemoryFileOut, memory_file_delete(agent=ag, **_no_none(a))),
        lambda a: True,
    ),
}


def register_kind(name: str, kind: Kind) -> None:
    """Add an operation kind of an app above agents (its ``ready()``; agents imports no such
    app): the batch and the single endpoints' ``Operation-Id`` path then replay it too."""
    if name in KINDS and KINDS[name] is not kind:
        raise ValueError(f"Operation kind {name!r} is already registered.")
    KINDS[name] = kind
    # Declared fields are copied from their constructor arguments: replace the field itself.
    OperationIn._declared_fields["op"] = _op_field()


def _op_field() -> serializers.ChoiceField:
    return serializers.ChoiceField(choices=sorted(KINDS), help_text="What to apply.")


class OperationIn(s.Input):
    id = s._id("The client's operation id (unique per user; a UUID is a good choice).")
    op = _op_field()
    args = serializers.DictField(
        required=False, default=dict, help_text="The operation's fields (as its single endpoint)."
    )


class BatchIn(s.Input):
    operations = OperationIn(
        many=True,
        help_text="At most ATLAS_OPERATION_BATCH_MAX (100) operations, applied in order.",
    )

    def validate_operations(self, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        limit = settings.ATLAS_OPERATION_BATCH_MAX
        if not value or len(value) > limit:
            raise serializers.ValidationError(f"Send 1 to {limit} operations.")
        return value


class OutcomeOut(serializers.Serializer[Any]):
    id = serializers.CharField(help_text="The operation id.")
    status = serializers.ChoiceField(
        choices=["applied", "duplicate", "conflict", "rejected", "retry"],
        help_text=(
            "applied | duplicate (the first result again) | conflict (409, server state in "
            "error.details) | rejected (4xx: invalid, e.g. 400 bad_front_matter naming the "
            "field, 404, 422 the id was used for another payload; or 500 internal_error: "
            "nothing applied, do not resend as is) | retry (503: the store or the database "
            "is unavailable, nothing recorded; send it again). Each operation is answered on "
            "its own: one that fails never undoes or blocks the others."
        ),
    )
    status_code = serializers.IntegerField(help_text="The HTTP status it would have had alone.")
    result = serializers.DictField(allow_null=True, help_text="What was applied (its shape).")
    error = serializers.DictField(allow_null=True, help_text="{code, message, details?}.")


class BatchOut(serializers.Serializer[Any]):
    results = OutcomeOut(many=True, help_text="One answer per operation, in order.")


def parse_operation(agent: Agent, item: dict[str, Any], *, status_code: int = 200) -> Operation:
    """An ``Operation`` whose ``run`` calls the kind's service; args that do not parse make
    it ``invalid`` (answered on its own, the rest of the batch goes on). ``status_code``: what
    a success answers (a single endpoint's 201)."""
    kind = KINDS[item["op"]]
    raw = item["args"]
    fingerprint = payload_hash(item["op"], raw)
    shape = kind.shape(data=raw)
    if not shape.is_valid():
        invalid = ValidationError("The operation's args are not valid.", fields=shape.errors)
        return Operation(
            item["id"], item["op"], fingerprint, lambda: {}, status_code, invalid=invalid
        )
    args = dict(shape.validated_data)
    return Operation(
        id=item["id"],
        kind=item["op"],
        request_hash=fingerprint,
        run=lambda: kind.run(agent, args),
        status_code=status_code,
        touches_store=kind.touches_store(args),
        together=kind.together(args) if kind.block is not None else None,
        block=kind.block,
        args=args,
        prepare=_prepared(kind, agent),
    )


def _prepared(kind: Kind, agent: Agent) -> Callable[[Sequence[dict[str, Any]]], None] | None:
    prepare = kind.prepare
    if prepare is None:
        return None
    return lambda many: prepare(agent, many)
