"""The session brief's sections: candidate items from the records, one function per section,
each item a line about one record (``knowledge.services.brief.Item``), best first.

Everything here is about one project: blockers, decisions and changes of its notes; its open
tasks; its last session with work in it; memories written from it (recall scoped to the
project). Paths are relative to the project root. Unread messages are the token's agent's.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings

from agents.models import Agent, Project, Session, Task
from agents.selectors import inbox, task_list
from atlas_platform.exceptions import AtlasError
from knowledge.models import Entity, Revision
from knowledge.parsing import DONE_STATUSES
from knowledge.selectors import blocked_entities
from knowledge.services.brief import Item, reason_of, relative, shorten
from memory.public import memory_recall
from tenants.models import User

logger = logging.getLogger(__name__)
OPEN_TASK_STATES = (
    Task.State.IN_PROGRESS,
    Task.State.BLOCKED,
    Task.State.SUSPENDED,
    Task.State.CREATED,
)
# Note types whose reasons the next session needs (their front matter ``type``).
DECISION_TYPES = ("decision", "adr", "plan", "initiative", "spec", "design")
CLOSED_STATUSES = DONE_STATUSES | {"superseded", "rejected", "cancelled", "abandoned", "archived"}
# Memories the model already reads elsewhere: Claude Code's own memory files (synced into its
# memory folder), so the brief does not say them twice.
SKIPPED_MEMORY_TAGS = frozenset({"memory-file"})
FILES_SHOWN = 8


def conflicts(project: Project) -> list[Item]:
    """Notes edited on two machines from the same version: the graph kept one, the other
    edit waits as a conflict revision until someone merges both into the file."""
    rows = Entity.objects.filter(project=project, conflicted=True, deleted_at__isnull=True)
    items = []
    for e in rows.order_by("path"):
        other = e.revisions.filter(kind=Revision.Kind.CONFLICT).order_by("-number").first()
        where = other.machine if other and other.machine else "another machine"
        line = (
            f"- {e.path} was edited on two machines: version {e.version} is kept, "
            f"the edit from {where} waits as revision {other.number if other else '?'}; merge "
            "both into the file and save it."
        )
        items.append(Item(ref=f"conflict:{e.key}", line=line, data={"key": e.key, "path": e.path}))
    return items


def blockers(project: Project, moment: datetime) -> list[Item]:
    found = blocked_entities(project, moment, 0)
    keys = [b.entity.key for b in found] + [x.key for b in found for x in b.blockers]
    rows = Entity.objects.filter(project=project, key__in=keys, deleted_at__isnull=True)
    bodies = {e.key: e.body for e in rows}
    paths = {e.key: e.path for e in rows}
    items = []
    for b in found:
        by = ", ".join(paths.get(x.key, x.key) for x in b.blockers)
        reason = reason_of(bodies.get(b.entity.key, ""), 160)
        name = paths.get(b.entity.key, b.entity.key)
        line = f"- {name} ({b.entity.status or 'open'}) blocked by {by}: {b.entity.title}"
        items.append(
            Item(
                ref=f"entity:{b.entity.key}",
                line=line + (f". {reason}" if reason else ""),
                data={
                    "key": b.entity.key,
                    "title": b.entity.title,
                    "status": b.entity.status,
                    "blocked_by": [x.key for x in b.blockers],
                    "idle_days": max(x.idle_days for x in b.blockers),
                    "reason": reason,
                },
                text=f"{b.entity.title}. {reason}",
                also=tuple(f"entity:{x.key}" for x in b.blockers),
            )
        )
    return items


def open_tasks(user: User, project: Project) -> list[Item]:
    rows = [
        t
        for state in OPEN_TASK_STATES
        for t in task_list(user=user, state=state, project_key=project.key, limit=20)
    ]
    order = {s: n for n, s in enumerate(OPEN_TASK_STATES)}
    rows.sort(key=lambda t: (order[Task.State(t.state)], -t.updated_at.timestamp(), t.pk))
    items = []
    for t in rows:
        detail = shorten(t.description.split("\n\n")[0], 140) if t.description else ""
        line = f"- #{t.pk} [{t.state}, {t.priority}] {t.title}"
        items.append(
            Item(
                ref=f"task:{t.pk}",
                line=line + (f": {detail}" if detail else ""),
                data={
                    "id": t.pk,
                    "title": t.title,
                    "state": t.state,
                    "priority": t.priority,
                    "version": t.version,
                    "detail": detail,
                },
            )
        )
    return items


def last_session(
    project: Project, moment: datetime, machine_key: str | None, current: str | None
) -> list[Item]:
    """The project's last session with work in it (turns, writes or files), with its true
    state: ended (and how), open and active, or open but silent (no end was recorded)."""
    rows = (
        Session.objects.filter(project=project)
        .exclude(turns=0, writes=0, files_touched=[])
        .select_related("agent", "machine")
        .order_by("-last_activity_at", "-id")
    )
    if current:
        rows = rows.exclude(external_id=current)
    session = rows.first()
    if session is None:
        return []
    machine = session.machine.key if session.machine else ""
    where = _machine_name(session, machine_key)
    files = [relative(f, project.name) for f in session.files_touched]
    files = list(dict.fromkeys(files))[-FILES_SHOWN:]
    state = session_state(session, moment)
    line = (
        f"- {session.agent.slug} on {where}, session {session.external_id}: {session.turns} "
        f"turns, {session.writes} writes; {state}"
        + (f"; files: {', '.join(files)}" if files else "")
    )
    return [
        Item(
            ref=f"session:{session.pk}",
            line=line,
            data={
                "session_id": session.external_id,
                "agent": session.agent.slug,
                "machine": machine,
                "started_at": session.started_at.isoformat(),
                "last_activity_at": session.last_activity_at.isoformat(),
                "ended_at": session.ended_at.isoformat() if session.ended_at else None,
                "end_reason": session.end_reason,
                "state": state,
                "turns": session.turns,
                "writes": session.writes,
                "files": files,
            },
        )
    ]


def _machine_name(session: Session, machine_key: str | None) -> str:
    if session.machine is None:
        return "an unknown machine"
    if session.machine.key == machine_key:
        return "this machine"
    label = session.machine.label
    return session.machine.key + (f" ({label})" if label and label != session.machine.key else "")


def session_state(session: Session, moment: datetime) -> str:
    if session.ended_at is not None:
        return f"ended {_when(session.ended_at)} ({session.end_reason or 'no reason'})"
    silent = moment - session.last_activity_at
    if silent > timedelta(seconds=settings.ATLAS_PRESENCE_OFFLINE_S):
        return f"no end recorded, last active {_when(session.last_activity_at)}"
    return f"still open, active {_when(session.last_activity_at)}"


def decisions(project: Project) -> list[Item]:
    """Live decisions and plans (and the like) that are not closed, newest first (those that
    give a reason before those that are a title only), each with its reason: the first lines
    of its body."""
    rows = (
        Entity.objects.filter(project=project, deleted_at__isnull=True, type__in=DECISION_TYPES)
        .exclude(status__in=CLOSED_STATUSES)
        .order_by("-updated_at", "key")[:30]
    )
    items = []
    for e in rows:
        reason = reason_of(e.body)
        status = f", {e.status}" if e.status else ""
        line = f"- {e.path} ({e.type}{status}): {e.title}"
        items.append(
            Item(
                ref=f"entity:{e.key}",
                line=line + (f". {reason}" if reason else ""),
                data={
                    "key": e.key,
                    "type": e.type,
                    "status": e.status,
                    "path": e.path,
                    "title": e.title,
                    "reason": reason,
                },
                text=f"{e.title}. {reason}",
            )
        )
    return sorted(items, key=lambda item: not item.data["reason"])  # stable: newest first


def unread_messages(agent: Agent | None) -> list[Item]:
    if agent is None:
        return []
    items = []
    for m in inbox(agent=agent, unread_only=True, limit=20):
        about = shorten(m.subject or m.body, 200)
        items.append(
            Item(
                ref=f"message:{m.pk}",
                line=f"- #{m.pk} from {m.sender.slug} ({m.kind}): {about}",
                data={
                    "id": m.pk,
                    "from": m.sender.slug,
                    "kind": m.kind,
                    "subject": m.subject,
                    "body": m.body[:500],
                },
                text=about,
            )
        )
    return items


def recent_changes(project: Project, since: datetime) -> list[Item]:
    rows = (
        Revision.objects.filter(entity__project=project, created_at__gte=since)
        .exclude(kind=Revision.Kind.CONFLICT)
        .select_related("entity")
        .order_by("-created_at", "-id")[:100]
    )
    items, seen = [], set()
    for r in rows:
        if r.entity.key in seen:
            continue  # the latest revision of each entity
        seen.add(r.entity.key)
        what = f"{r.kind} {relative(r.path, project.name)} ({r.status or '-'})"
        items.append(
            Item(
                ref=f"entity:{r.entity.key}",
                line=f"- {r.created_at:%Y-%m-%d %H:%M} {what}: {r.title}",
                data={
                    "key": r.entity.key,
                    "title": r.title,
                    "kind": r.kind,
                    "status": r.status,
                    "changed": list(r.changed),
                    "at": r.created_at.isoformat(),
                },
                text=r.title,
            )
        )
    return items


def memories(user: User, project: Project, k: int = 8) -> list[Item]:
    """Memories written from this project (recall scoped to it; not counted as the user's
    use), on the project's name and its latest note titles. A store that is down leaves the
    section empty."""
    query = " ".join([project.name, *_recent_titles(project)])[:1000]
    try:
        result = memory_recall(
            user=user,
            query=query,
            k=k,
            memory_types=("semantic", "procedural"),
            include_catalog=False,
            track_usage=False,
            project=project.key,
        )
    except AtlasError:
        logger.warning("brief without memories: recall failed")
        return []
    items = []
    for hit in result.hits:
        doc = hit.doc
        if SKIPPED_MEMORY_TAGS & set(doc.tags):
            continue
        text = shorten(doc.text, 300)
        items.append(
            Item(
                ref=f"memory:{doc.id}",
                line=f"- {text}",
                data={"id": doc.id, "type": doc.memory_type, "text": text},
                text=doc.text,
            )
        )
    return items


def _recent_titles(project: Project) -> list[str]:
    rows = (
        Revision.objects.filter(entity__project=project, entity__deleted_at__isnull=True)
        .exclude(kind=Revision.Kind.CONFLICT)
        .order_by("-created_at", "-id")
        .values_list("title", flat=True)[:5]
    )
    return list(dict.fromkeys(rows))


def _when(moment: datetime) -> str:
    return f"{moment:%Y-%m-%d %H:%M} UTC"


def as_data(items: list[Item]) -> list[dict[str, Any]]:
    return [{**item.data, "ref": item.ref} for item in items]
