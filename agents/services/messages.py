"""Messages between agents of one tenant: send, acknowledge, reply (which threads)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from django.conf import settings
from django.db import transaction

from agents.models import Agent, Message, Task
from agents.selectors import inbox_message
from agents.services.agents import agent_register
from agents.services.common import audit, clean_tags, now
from atlas_platform.exceptions import NotFound, ValidationError
from tenants.models import User
from tenants.services.validation import validate


def _recipient(sender: Agent, user_id: str | None, slug: str) -> Agent:
    """An agent of the sender's tenant: another tenant's looks exactly like a missing one.
    One of the sender's own user not registered yet is registered now, so the message waits in
    its inbox (an agent installed later reads it) instead of failing on a later replay."""
    user = sender.user
    if user_id is None or user_id == user.external_id:
        return agent_register(user=user, slug=slug).agent
    found = User.objects.filter(
        tenant_id=user.tenant_id, external_id=user_id, status=User.Status.ACTIVE
    ).first()
    if found is None:
        raise NotFound(f"No agent {slug!r} of user {user_id!r}.", code="agent_not_found")
    user = found
    agent = Agent.objects.for_caller(user).filter(slug=slug).select_related("user").first()
    if agent is None:
        raise NotFound(f"No agent {slug!r} of user {user.external_id!r}.", code="agent_not_found")
    return agent


def _body(body: str) -> str:
    limit = settings.ATLAS_MESSAGE_MAX_CHARS
    if not isinstance(body, str) or not body.strip():
        raise ValidationError("body must be a non-empty string.", code="empty_body")
    if len(body) > limit:
        raise ValidationError(
            f"body is {len(body)} characters; the limit is {limit}.", code="too_long"
        )
    return body


def message_send(
    *,
    sender: Agent,
    to_agent: str,
    body: str,
    to_user: str | None = None,
    kind: str = Message.Kind.NOTE,
    priority: str = Task.Priority.NORMAL,
    subject: str = "",
    tags: Sequence[str] = (),
) -> Message:
    """Send a message to an agent of the sender's tenant (``to_user``: its user's external id,
    default the sender's own user). A new message opens a thread."""
    message = Message(
        sender=sender,
        kind=kind,
        priority=priority,
        subject=subject.strip(),
        body=_body(body),
        tags=clean_tags(tags),
        thread=uuid.uuid4().hex,
        created_at=now(),
    )
    # checked before anything is written: finding the recipient may register it
    validate(message, exclude=["sender", "recipient", "reply_to"])
    message.recipient = _recipient(sender, to_user, to_agent)
    return _save(message)


def message_reply(
    *,
    agent: Agent,
    message_id: int,
    body: str,
    kind: str = Message.Kind.ANSWER,
    subject: str | None = None,
) -> Message:
    """Answer a message of the agent's inbox: to its sender, in its thread."""
    original = inbox_message(agent=agent, message_id=message_id)
    reply = Message(
        sender=agent,
        recipient=original.sender,
        kind=kind,
        priority=original.priority,
        subject=_reply_subject(original.subject, subject),
        body=_body(body),
        tags=list(original.tags),
        thread=original.thread,
        reply_to=original,
        created_at=now(),
    )
    return _save(reply)


def _reply_subject(original: str, given: str | None) -> str:
    if given is not None:
        return given.strip()
    return f"Re: {original}"[:300] if original else ""


def _save(message: Message) -> Message:
    validate(message, exclude=["sender", "recipient", "reply_to"])
    with transaction.atomic():
        message.save()
        # Ids only: never the subject or the body.
        audit(
            "message.reply" if message.reply_to_id else "message.send",
            user=message.sender.user,
            target=message,
            agent=message.sender,
            recipient=message.recipient_id,
            thread=message.thread,
            reply_to=message.reply_to_id,
        )
    return message


def message_ack(*, agent: Agent, message_id: int) -> Message:
    """Acknowledge a message of the agent's inbox (again: no change)."""
    message = inbox_message(agent=agent, message_id=message_id)
    if message.acknowledged_at is not None:
        return message
    with transaction.atomic():
        updated = Message.objects.filter(pk=message.pk, acknowledged_at__isnull=True).update(
            acknowledged_at=now()
        )
        if updated:
            audit("message.ack", user=agent.user, target=message, agent=agent)
    message.refresh_from_db(fields=["acknowledged_at"])
    return message
