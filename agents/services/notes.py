"""Memories an agent writes: Atlas semantic facts (a decision, a note) carrying the agent,
project and session, so recall, supersession, decay, forget and erasure work unchanged."""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import F

from agents.models import Agent, Session
from agents.selectors import own_project, session_get
from agents.services.common import clean_tags
from memory.public import MemoryDoc, memory_forget, memory_write


def agent_memory_write(
    *,
    agent: Agent,
    text: str,
    fact_type: str | None = None,
    tags: Sequence[str] = (),
    project_key: str | None = None,
    session_id: str | None = None,
    supersedes: Sequence[str] = (),
) -> MemoryDoc:
    """Write a semantic fact as the agent (``metadata``: agent, project, session; tags carry
    ``agent:<slug>``; the memory's ``project`` field carries the project, so a recall can be
    scoped to it); a session's write counter goes up by one. ``supersedes``: the user's
    current facts it replaces (they stay, flagged)."""
    user = agent.user
    project = own_project(user=user, key=project_key) if project_key else None
    session = session_get(agent=agent, session_id=session_id) if session_id else None
    metadata = {
        "agent": agent.slug,
        "project": project.key if project else None,
        "session": session.external_id if session else None,
    }
    doc = memory_write(
        user=user,
        text=text,
        memory_type="semantic",
        fact_type=fact_type,
        tags=[*clean_tags(tags), f"agent:{agent.slug}"],
        metadata=metadata,
        supersedes=supersedes,
        source="agent",
        project=project.key if project else None,
    )
    if session is not None:
        Session.objects.filter(pk=session.pk).update(writes=F("writes") + 1)
    return doc


def agent_memory_forget(*, agent: Agent, memory_id: str) -> dict[str, str]:
    """Forget one of the user's memories (``atlas forget``); the same as the memory API's."""
    memory_forget(user=agent.user, memory_id=memory_id)
    return {"id": memory_id, "forgotten": "true"}
