"""Sessions: an idempotent start keyed by the agent's own session id, counters bumped in place
on every turn (never a row per turn), an end with its reason and an optional summary kept as
an episodic memory linked to the session."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F

from agents.models import Agent, Presence, Session
from agents.selectors import own_project, session_get
from agents.services.common import audit, client_id, now
from atlas_platform.exceptions import Conflict, NotFound, ValidationError
from memory.public import clean_text, memory_turn_record

END_REASONS = ("completed", "user_exit", "clear", "logout", "timeout", "error", "other")
MAX_TURNS_PER_CALL = 10_000


@dataclass(frozen=True)
class SessionStarted:
    session: Session
    created: bool


def session_start(
    *,
    agent: Agent,
    session_id: str,
    project_key: str | None = None,
    machine_key: str | None = None,
) -> SessionStarted:
    """The agent's session with this id, started now unless it already exists (a start hook
    that fires twice starts one session)."""
    client_id(session_id, field="session_id")
    user = agent.user
    project = own_project(user=user, key=project_key) if project_key else None
    machine = None
    if machine_key:
        machine = user.machines.filter(key=machine_key).first()
        if machine is None:
            raise NotFound(f"No machine {machine_key!r} for this user.", code="machine_not_found")
    existing = Session.objects.filter(agent=agent, external_id=session_id).first()
    if existing is not None:
        return SessionStarted(existing, created=False)
    moment = now()
    session = Session(
        agent=agent,
        external_id=session_id,
        project=project,
        machine=machine,
        started_at=moment,
        last_activity_at=moment,
    )
    try:
        with transaction.atomic():
            session.save()
            audit("session.start", user=user, target=session, agent=agent, session=session_id)
    except IntegrityError:
        return SessionStarted(session_get(agent=agent, session_id=session_id), created=False)
    return SessionStarted(session, created=True)


def session_touch(
    *,
    agent: Agent,
    session_id: str,
    turns: int = 1,
    writes: int = 0,
    files: Sequence[str] = (),
) -> Session:
    """Count turns and writes of an open session and note the files it touched (at most
    ``ATLAS_SESSION_MAX_FILES``, first come first kept). Updated in place: activity, not a
    state change, so no audit row either."""
    if not (0 <= turns <= MAX_TURNS_PER_CALL and 0 <= writes <= MAX_TURNS_PER_CALL):
        raise ValidationError(
            f"turns and writes must be between 0 and {MAX_TURNS_PER_CALL}.", code="bad_counter"
        )
    if any(not isinstance(f, str) or not 0 < len(f) <= 500 for f in files):
        raise ValidationError("files: paths of 1-500 characters.", code="bad_files")
    session = session_get(agent=agent, session_id=session_id)
    if session.ended_at is not None:
        raise Conflict(f"Session {session_id!r} has ended.", code="session_ended")
    moment = now()
    with transaction.atomic():
        Session.objects.filter(pk=session.pk).update(
            turns=F("turns") + turns, writes=F("writes") + writes, last_activity_at=moment
        )
        if files:
            _note_files(session.pk, files)
    session.refresh_from_db()
    return session


def _note_files(session_pk: int, files: Sequence[str]) -> None:
    session = Session.objects.select_for_update().only("files_touched").get(pk=session_pk)
    cap = settings.ATLAS_SESSION_MAX_FILES
    touched = list(session.files_touched)
    seen = set(touched)
    for path in files:
        if len(touched) >= cap:
            break
        if path not in seen:
            touched.append(path)
            seen.add(path)
    if len(touched) != len(session.files_touched):
        Session.objects.filter(pk=session_pk).update(files_touched=touched)


def session_end(
    *, agent: Agent, session_id: str, reason: str = "completed", summary: str | None = None
) -> Session:
    """End the session (its presence rows turn idle). Ending twice is a no-op. A ``summary``
    is written as an episodic memory of the session (agent and session on it), after the rows
    commit; if the store is down the end stands and a retry writes the summary."""
    if reason not in END_REASONS:
        raise ValidationError(f"reason must be one of {', '.join(END_REASONS)}.", code="bad_reason")
    if summary is not None:
        clean_text(summary, field="summary")
    session = session_get(agent=agent, session_id=session_id)
    user = agent.user
    if session.ended_at is None:
        with transaction.atomic():
            session = Session.objects.select_for_update().get(pk=session.pk)
            if session.ended_at is None:
                session.ended_at = session.last_activity_at = now()
                session.end_reason = reason
                session.save(update_fields=["ended_at", "last_activity_at", "end_reason"])
                Presence.objects.filter(agent=agent, session=session).update(session=None)
                audit("session.end", user=user, target=session, agent=agent, reason=reason)
    if summary and not session.summary_memory_id:
        episode = memory_turn_record(
            user=user, text=summary, session_id=session.external_id, agent=agent.slug, k=1
        ).episode
        Session.objects.filter(pk=session.pk).update(summary_memory_id=episode.id)
        session.summary_memory_id = episode.id
    return session


def session_checkpoint(*, agent: Agent, session_id: str, text: str) -> dict[str, str]:
    """Keep a checkpoint of the session (the client's PreCompact hook writes it from the
    transcript, no model involved) as an episodic memory carrying the agent and session."""
    clean_text(text, field="text")
    session = session_get(agent=agent, session_id=session_id)
    episode = memory_turn_record(
        user=agent.user, text=text, session_id=session.external_id, agent=agent.slug, k=1
    ).episode
    return {"id": episode.id, "memory_type": episode.memory_type, "session_id": session_id}
