"""The handoff brief: what a new session (on another machine, perhaps) needs to pick up a
project, built deterministically from the records and cut to a token budget.

Sections, most important first (a section that does not fit is cut item by item, and the
brief says it was truncated): active blockers, open tasks, unread messages (of the token's
agent), the last session on another machine, recent entity changes, the project's most
relevant memories. The same records give the same brief (sorted by stable keys; the
generation time is in the JSON only). Narration by the configured chat model is optional,
off by default; its token use is kept per user (``HandoffNarration``).
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction

from agents.models import Agent, Task
from agents.selectors import inbox, session_list, task_list
from agents.services.common import now
from atlas_platform.exceptions import AtlasError, Conflict, ValidationError
from consolidation.llm import chat_json, model_configured
from knowledge.models import HandoffNarration, Revision
from knowledge.selectors import blocked_entities, readable_project
from memory.services.recall import memory_recall
from tenants.models import User
from tenants.services.audit import audit_record

logger = logging.getLogger(__name__)
OPEN_TASK_STATES = (
    Task.State.IN_PROGRESS,
    Task.State.BLOCKED,
    Task.State.SUSPENDED,
    Task.State.CREATED,
)
SECTIONS = (
    "active_blockers",
    "open_tasks",
    "unread_messages",
    "last_session_elsewhere",
    "recent_changes",
    "memories",
)
TITLES = {
    "active_blockers": "Active blockers",
    "open_tasks": "Open tasks",
    "unread_messages": "Unread messages",
    "last_session_elsewhere": "Last session on another machine",
    "recent_changes": "Recent entity changes",
    "memories": "Relevant memories",
}


def tokens(text: str) -> int:
    """A conservative token estimate (about four characters a token)."""
    return math.ceil(len(text) / 4)


@dataclass
class Handoff:
    project: str
    project_name: str
    generated_at: datetime
    hours: float
    token_budget: int
    sections: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    tokens_used: int = 0
    truncated: bool = False
    markdown: str = ""
    narration: str | None = None


def handoff_build(
    *,
    user: User,
    project_key: str,
    agent: Agent | None = None,
    machine_key: str | None = None,
    hours: float = 24,
    token_budget: int = 2000,
    narrate: bool = False,
) -> Handoff:
    """The brief for a new session in the project (see the module)."""
    if not 0 < hours <= 24 * 90:
        raise ValidationError("hours must be in (0, 2160].", code="bad_hours")
    if not 100 <= token_budget <= 32_000:
        raise ValidationError("token_budget must be 100-32000.", code="bad_token_budget")
    if narrate and not model_configured():
        raise Conflict(
            "Narration needs a chat model (ATLAS_CONSOLIDATION_BASE_URL and _MODEL); "
            "ask without narrate.",
            code="narration_unavailable",
        )
    project = readable_project(user=user, key=project_key)
    moment = now()
    raw = {
        "active_blockers": _blockers(project, moment),
        "open_tasks": _tasks(user, project.key),
        "unread_messages": _messages(agent),
        "last_session_elsewhere": _last_session(user, project.pk, machine_key),
        "recent_changes": _changes(project, moment - timedelta(hours=hours)),
        "memories": _memories(user, project.name, raw_titles(project)),
    }
    brief = Handoff(project.key, project.name, moment, hours, token_budget)
    _fit(brief, raw)
    if narrate:
        brief.narration = _narrate(user, project, brief)
    return brief


def raw_titles(project: Any) -> list[str]:
    rows = (
        Revision.objects.filter(entity__project=project, entity__deleted_at__isnull=True)
        .exclude(kind=Revision.Kind.CONFLICT)
        .order_by("-created_at", "-id")
        .values_list("title", flat=True)[:5]
    )
    return list(dict.fromkeys(rows))


def _blockers(project: Any, moment: datetime) -> list[dict[str, Any]]:
    return [
        {
            "key": b.entity.key,
            "title": b.entity.title,
            "status": b.entity.status,
            "blocked_by": [x.key for x in b.blockers],
            "idle_days": max(x.idle_days for x in b.blockers),
        }
        for b in blocked_entities(project, moment, 0)
    ]


def _tasks(user: User, project_key: str) -> list[dict[str, Any]]:
    rows = [
        t
        for state in OPEN_TASK_STATES
        for t in task_list(user=user, state=state, project_key=project_key, limit=20)
    ]
    order = {s: n for n, s in enumerate(OPEN_TASK_STATES)}
    rows.sort(key=lambda t: (order[Task.State(t.state)], -t.updated_at.timestamp(), t.pk))
    return [
        {
            "id": t.pk,
            "title": t.title,
            "state": t.state,
            "priority": t.priority,
            "version": t.version,
        }
        for t in rows
    ]


def _messages(agent: Agent | None) -> list[dict[str, Any]]:
    if agent is None:
        return []
    return [
        {
            "id": m.pk,
            "from": m.sender.slug,
            "kind": m.kind,
            "subject": m.subject,
            "body": m.body[:500],
        }
        for m in inbox(agent=agent, unread_only=True, limit=20)
    ]


def _last_session(user: User, project_id: int, machine_key: str | None) -> list[dict[str, Any]]:
    for session in session_list(user=user, limit=200):
        if session.project_id != project_id:
            continue
        machine = session.machine.key if session.machine_id and session.machine else ""
        if machine_key and machine == machine_key:
            continue
        return [
            {
                "session_id": session.external_id,
                "agent": session.agent.slug,
                "machine": machine,
                "started_at": session.started_at.isoformat(),
                "ended_at": session.ended_at.isoformat() if session.ended_at else None,
                "turns": session.turns,
                "files": list(session.files_touched)[-10:],
            }
        ]
    return []


def _changes(project: Any, since: datetime) -> list[dict[str, Any]]:
    rows = (
        Revision.objects.filter(entity__project=project, created_at__gte=since)
        .exclude(kind=Revision.Kind.CONFLICT)
        .select_related("entity")
        .order_by("-created_at", "-id")[:100]
    )
    return [
        {
            "key": r.entity.key,
            "title": r.title,
            "kind": r.kind,
            "status": r.status,
            "changed": list(r.changed),
            "at": r.created_at.isoformat(),
        }
        for r in rows
    ]


def _memories(user: User, name: str, titles: list[str]) -> list[dict[str, Any]]:
    """The project's most relevant memories: a recall on its name and latest titles (not
    counted as the user's use). A store that is down leaves the section empty."""
    query = " ".join([name, *titles])[:1000]
    try:
        result = memory_recall(
            user=user, query=query, k=5, include_catalog=False, track_usage=False
        )
    except AtlasError:
        logger.warning("handoff without memories: recall failed")
        return []
    return [
        {"id": h.doc.id, "type": h.doc.memory_type, "text": h.doc.text[:400]} for h in result.hits
    ]


def _line(section: str, item: dict[str, Any]) -> str:
    if section == "active_blockers":
        by = ", ".join(item["blocked_by"])
        return f"- {item['key']} ({item['status'] or 'open'}) blocked by {by}: {item['title']}"
    if section == "open_tasks":
        return f"- #{item['id']} [{item['state']}, {item['priority']}] {item['title']}"
    if section == "unread_messages":
        about = item["subject"] or item["body"][:120]
        return f"- #{item['id']} from {item['from']} ({item['kind']}): {about}"
    if section == "last_session_elsewhere":
        files = ", ".join(item["files"]) or "none"
        return (
            f"- {item['agent']} on {item['machine'] or 'unknown machine'}, started "
            f"{item['started_at']}, {item['turns']} turns; files: {files}"
        )
    if section == "recent_changes":
        what = f"{item['kind']} {item['key']} ({item['status'] or '-'})"
        return f"- {item['at'][:16]} {what}: {item['title']}"
    return f"- [{item['type']}] {item['text']}"


def _fit(brief: Handoff, raw: dict[str, list[dict[str, Any]]]) -> None:
    """Add items, most important sections first, while the markdown stays in budget."""
    lines = [f"# Handoff: {brief.project_name}", ""]
    used = tokens("\n".join(lines))
    for section in SECTIONS:
        items = raw[section]
        kept: list[dict[str, Any]] = []
        header = [f"## {TITLES[section]}"]
        cost = tokens(header[0]) + 1
        if not items:
            brief.sections[section] = []
            continue
        if used + cost > brief.token_budget:
            brief.truncated = True
            brief.sections[section] = []
            continue
        section_lines = list(header)
        for item in items:
            line = _line(section, item)
            if used + cost + tokens(line) + 1 > brief.token_budget:
                brief.truncated = True
                break
            kept.append(item)
            section_lines.append(line)
            cost += tokens(line) + 1
        brief.sections[section] = kept
        if kept:
            lines += [*section_lines, ""]
            used += cost
    brief.markdown = "\n".join(lines).rstrip() + "\n"
    brief.tokens_used = tokens(brief.markdown)


def _narrate(user: User, project: Any, brief: Handoff) -> str:
    messages = [
        {
            "role": "system",
            "content": (
                "You write a short narrative handoff for a coding agent starting a new session. "
                'Answer a JSON object {"narration": "<at most 200 words>"} using only the brief.'
            ),
        },
        {"role": "user", "content": brief.markdown},
    ]
    completion = chat_json(messages)
    try:
        text = str(json.loads(completion.text).get("narration", ""))[:4000]
    except (ValueError, AttributeError):
        text = ""
    with transaction.atomic():
        row = HandoffNarration.objects.create(
            user=user,
            project=project,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
        )
        audit_record(
            action="handoff.narrate",
            tenant=user.tenant,
            subject_user=user,
            target=row,
            metadata={
                "project": project.key,
                "prompt_tokens": completion.prompt_tokens,
                "completion_tokens": completion.completion_tokens,
            },
        )
    return text or None  # type: ignore[return-value]
