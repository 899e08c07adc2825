"""The session brief (the handoff): what a new session needs to pick up a project, composed
here and only here (the CLI's SessionStart hook puts its local-only lines, such as open
memory-file conflicts, before it), deterministically from the records, within a token budget.

Sections, most important first: notes in conflict (edited on two machines), active blockers,
open tasks, the last session with work in it, decisions and plans with their reasons, unread
messages (of the token's agent), memories written from the project, recent note changes.
``knowledge.services.brief`` fits them to the budget (whole items only, each record and each
memory text once) and ``brief_sections`` builds them.
The same records give the same brief (the generation time is in the JSON only). Narration by
the configured chat model is optional, off by default; its token use is kept per user
(``HandoffNarration``).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction

from agents.models import Agent, Project
from agents.services.common import now
from atlas_platform.exceptions import Conflict, ValidationError
from consolidation.llm import chat_json, model_configured
from knowledge.models import HandoffNarration
from knowledge.selectors import readable_project
from knowledge.services import brief_sections as sections
from knowledge.services.brief import Item, fit, tokens
from tenants.models import User
from tenants.services.audit import audit_record

logger = logging.getLogger(__name__)
SECTIONS = (
    "conflicts",
    "active_blockers",
    "open_tasks",
    "last_session",
    "decisions",
    "unread_messages",
    "memories",
    "recent_changes",
)
TITLES = {
    "conflicts": "## Conflicts to merge",
    "active_blockers": "## Active blockers",
    "open_tasks": "## Open tasks",
    "last_session": "## Last session with work",
    "decisions": "## Decisions and plans (why)",
    "unread_messages": "## Unread messages",
    "memories": "## Project memories",
    "recent_changes": "## Recent note changes",
}
# The first round of the fit: how many items each section gets before any section gets more
# (chosen on the dev split of atlas-lab/lab/evaluation/briefs; docs/brief.md).
FIRST = {
    "conflicts": 5,
    "active_blockers": 3,
    "open_tasks": 2,
    "last_session": 1,
    "decisions": 4,
    "unread_messages": 2,
    "memories": 2,
    "recent_changes": 0,
}
# The second round: a few more of each, before the rest in priority order.
SECOND = {
    "active_blockers": 3,
    "open_tasks": 2,
    "last_session": 0,
    "decisions": 4,
    "unread_messages": 3,
    "memories": 2,
    "recent_changes": 0,
}
MIN_BUDGET, MAX_BUDGET = 100, 32_000

__all__ = ["SECTIONS", "Handoff", "handoff_build", "tokens"]


@dataclass
class Handoff:
    project: str
    project_name: str
    generated_at: datetime
    hours: float
    token_budget: int
    sections: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    omitted: dict[str, int] = field(default_factory=dict)
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
    session_id: str | None = None,
    hours: float = 24,
    token_budget: int | None = None,
    narrate: bool = False,
) -> Handoff:
    """The brief for a new session in the project (see the module). ``token_budget``
    defaults to ``ATLAS_BRIEF_TOKENS``; ``session_id`` is the session starting (never shown
    as the last one); ``machine_key`` is the caller's machine (its sessions say so)."""
    budget = settings.ATLAS_BRIEF_TOKENS if token_budget is None else token_budget
    if not 0 < hours <= 24 * 90:
        raise ValidationError("hours must be in (0, 2160].", code="bad_hours")
    if not MIN_BUDGET <= budget <= MAX_BUDGET:
        raise ValidationError("token_budget must be 100-32000.", code="bad_token_budget")
    if narrate and not model_configured():
        raise Conflict(
            "Narration needs a chat model (ATLAS_CONSOLIDATION_BASE_URL and _MODEL); "
            "ask without narrate.",
            code="narration_unavailable",
        )
    project = readable_project(user=user, key=project_key)
    moment = now()
    raw = _candidates(user, project, agent, machine_key, session_id, moment, hours)
    brief = Handoff(project.key, project.name, moment, hours, budget)
    fitted = fit(
        head=header(project),
        sections=[(name, TITLES[name], raw[name]) for name in SECTIONS],
        budget=budget,
        first=FIRST,
        second=SECOND,
    )
    brief.sections = {name: sections.as_data(fitted.chosen[name]) for name in SECTIONS}
    brief.omitted = fitted.omitted
    brief.truncated = fitted.truncated
    brief.markdown = "\n".join(fitted.lines) + "\n"
    brief.tokens_used = tokens(brief.markdown)
    if narrate:
        brief.narration = _narrate(user, project, brief)
    return brief


def header(project: Project) -> list[str]:
    return [
        f"# Atlas brief: {project.name}",
        f'Project key {project.key} (the graph tools take it, the name, or "current").',
    ]


def _candidates(
    user: User,
    project: Project,
    agent: Agent | None,
    machine_key: str | None,
    session_id: str | None,
    moment: datetime,
    hours: float,
) -> dict[str, list[Item]]:
    return {
        "conflicts": sections.conflicts(project),
        "active_blockers": sections.blockers(project, moment),
        "open_tasks": sections.open_tasks(user, project),
        "last_session": sections.last_session(project, moment, machine_key, session_id),
        "decisions": sections.decisions(project),
        "unread_messages": sections.unread_messages(agent),
        "memories": sections.memories(user, project),
        "recent_changes": sections.recent_changes(project, moment - timedelta(hours=hours)),
    }


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
