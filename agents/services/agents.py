"""Agents, the tokens bound to them, machines and presence (heartbeats)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import F

from agents.models import Agent, Machine, Presence
from agents.selectors import session_get, task_get
from agents.services.common import audit, client_id, now
from atlas_platform.exceptions import ValidationError
from tenants.models import PlatformToken, User
from tenants.services.tokens import IssuedToken, token_issue
from tenants.services.validation import validate


@dataclass(frozen=True)
class Registered:
    agent: Agent
    created: bool


def agent_register(*, user: User, slug: str, display_name: str = "") -> Registered:
    """The user's agent with this slug, created on first use (a client registers on every
    install: the second time is a no-op, and a changed display name is kept)."""
    existing = Agent.objects.for_caller(user).filter(slug=slug).first()
    if existing is not None:
        return Registered(existing, created=False)
    agent = Agent(user=user, slug=slug, display_name=display_name.strip(), created_at=now())
    validate(agent, exclude=["user"])
    try:
        with transaction.atomic():
            agent.save()
            audit("agent.register", user=user, target=agent, agent=agent)
    except IntegrityError:  # registered by a concurrent request
        return Registered(Agent.objects.for_caller(user).get(slug=slug), created=False)
    return Registered(agent, created=True)


def agent_token_issue(
    *, agent: Agent, name: str, expires_at: datetime | None = None
) -> IssuedToken:
    """A user token bound to ``agent``: every request with it acts as that agent (the agent is
    never taken from a request body)."""
    user = agent.user
    with transaction.atomic():
        issued = token_issue(tenant=user.tenant, user=user, name=name, expires_at=expires_at)
        PlatformToken.objects.filter(pk=issued.token.pk).update(agent_slug=agent.slug)
        issued.token.agent_slug = agent.slug
        audit("agent.token_bind", user=user, target=agent, agent=agent, token=issued.token.pk)
    return issued


MACHINE_LABEL_MAX = 40


def agent_machine_token_issue(
    *, user: User, agent_slug: str, machine: str, expires_at: datetime | None = None
) -> IssuedToken:
    """A token for one agent of ``user`` on one machine (the agent is registered on first use):
    one token per machine, so a lost laptop's token is revoked without touching the others. The
    machine's label names the token (``claude-code on work-laptop``); shown once."""
    label = " ".join(machine.split())
    if not label or len(label) > MACHINE_LABEL_MAX:
        raise ValidationError(
            f"Name the machine in 1-{MACHINE_LABEL_MAX} characters.",
            code="invalid",
            fields={"machine": ["Required, at most 40 characters."]},
        )
    agent = agent_register(user=user, slug=agent_slug).agent
    return agent_token_issue(agent=agent, name=f"{agent.slug} on {label}", expires_at=expires_at)


def presence_heartbeat(
    *,
    agent: Agent,
    machine_key: str,
    label: str = "",
    os: str = "",
    client_version: str = "",
    session_id: str | None = None,
    task_id: int | None = None,
) -> Presence:
    """Mark the agent alive on this machine, in server time. One presence row per agent and
    machine, updated in place (never a row per heartbeat); the first heartbeat of a machine or
    of an agent on it is audited, later ones are liveness, not state changes."""
    user = agent.user
    client_id(machine_key, field="machine_key")
    session = session_get(agent=agent, session_id=session_id) if session_id else None
    task = task_get(user=user, task_id=task_id) if task_id is not None else None
    moment = now()
    described = {
        k: v for k, v in (("label", label), ("os", os), ("client_version", client_version)) if v
    }
    machine = _machine(user, machine_key, moment, described)
    updated = Presence.objects.filter(agent=agent, machine=machine).update(
        last_heartbeat_at=moment, heartbeats=F("heartbeats") + 1, session=session, task=task
    )
    if not updated:
        try:
            with transaction.atomic():
                presence = Presence.objects.create(
                    agent=agent,
                    machine=machine,
                    last_heartbeat_at=moment,
                    heartbeats=1,
                    session=session,
                    task=task,
                )
                audit(
                    "presence.start", user=user, target=presence, agent=agent, machine=machine.key
                )
            return presence
        except IntegrityError:  # a concurrent first heartbeat: count this one on its row
            Presence.objects.filter(agent=agent, machine=machine).update(
                last_heartbeat_at=moment, heartbeats=F("heartbeats") + 1
            )
    return Presence.objects.select_related("machine", "agent", "session").get(
        agent=agent, machine=machine
    )


def _machine(user: User, key: str, moment: datetime, described: dict[str, str]) -> Machine:
    machine = Machine(user=user, key=key, first_seen_at=moment, last_seen_at=moment, **described)
    validate(machine, exclude=["user"])  # also before an update: lengths, the key's form
    if Machine.objects.for_caller(user).filter(key=key).update(last_seen_at=moment, **described):
        return Machine.objects.for_caller(user).get(key=key)
    try:
        with transaction.atomic():
            machine.save()
            audit("machine.register", user=user, target=machine, machine=key)
    except IntegrityError:
        return Machine.objects.for_caller(user).get(key=key)
    return machine
