"""The brief eval: load a scripted project history (``generators/briefs.py``) into a fresh
tenant through the services the agents and the CLI use, build the focus project's brief at
each budget, and score it.

Scores per brief: the share of needed facts present (a fact: one of its phrases, or all of
its ``line`` phrases on one line); the share of the brief's item tokens that repeat an earlier
item (the same record, or most of an earlier item's words) or come from another project (the
item's record looked up: a note of another project, a task, session or memory of another);
the brief's size in estimated tokens.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.utils import timezone

from lab.evaluation.generators.briefs import BRIEFS_DIR
from lab.evaluation.overlap import content_terms

BUDGETS = (500, 1500, 4000)
SAME_WORDS = 0.8  # an item whose content terms are this much inside an earlier item's


def histories(split: str | None = None, directory: Path = BRIEFS_DIR) -> list[dict[str, Any]]:
    found = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(directory.glob("*.json"))]
    return [h for h in found if split in (None, "all", h["split"])]


@dataclass
class Loaded:
    user: Any
    projects: dict[str, Any]  # name -> Project
    agent: Any  # the agent starting the next session
    machine: str


def load(history: dict[str, Any], user: Any) -> Loaded:
    """Replay the history's events for ``user`` (a fresh tenant's)."""
    from agents.services.agents import agent_register, presence_heartbeat
    from agents.services.projects import project_register

    me = agent_register(user=user, slug="claude-code").agent
    other = agent_register(user=user, slug="codex").agent
    for machine in ("laptop", "desktop"):
        presence_heartbeat(agent=other, machine_key=machine, label=f"alice-{machine}")
    projects = {
        p["name"]: project_register(user=user, remote=p["remote"]).project
        for p in history["projects"]
    }
    for event in history["events"]:
        EVENTS[event["kind"]](user, other, projects, event)
    return Loaded(user, projects, me, history["machine"])


def _note(user: Any, agent: Any, projects: dict[str, Any], e: dict[str, Any]) -> None:
    from knowledge.services.entities import entity_upsert

    key = projects[e["project"]].key
    entity_upsert(user=user, project_key=key, path=e["path"], content=e["content"])


def _conflict(user: Any, agent: Any, projects: dict[str, Any], e: dict[str, Any]) -> None:
    """Both machines edit the note from its first version: the second edit conflicts."""
    from knowledge.services.entities import entity_upsert

    for machine in ("laptop", "desktop"):
        entity_upsert(
            user=user,
            project_key=projects[e["project"]].key,
            path=e["path"],
            content=f"{e['content']}\nEdited on the {machine}.\n",
            base_version=1,
            machine_key=machine,
        )


def _task(user: Any, agent: Any, projects: dict[str, Any], e: dict[str, Any]) -> None:
    from agents.services.tasks import task_create, task_transition

    task = task_create(
        user=user, agent=agent, title=e["title"], project_key=projects[e["project"]].key
    )
    path = {
        "created": [],
        "in_progress": ["in_progress"],
        "blocked": ["in_progress", "blocked"],
        "done": ["in_progress", "completed"],
    }[e["state"]]
    for state in path:
        task = task_transition(
            user=user, task_id=task.pk, to_state=state, expected_version=task.version, agent=agent
        )


def _memory(user: Any, agent: Any, projects: dict[str, Any], e: dict[str, Any]) -> None:
    from agents.services.notes import agent_memory_write

    project = projects[e["project"]].key if e["project"] else None
    agent_memory_write(agent=agent, text=e["text"], project_key=project)


def _session(user: Any, agent: Any, projects: dict[str, Any], e: dict[str, Any]) -> None:
    from agents.models import Session
    from agents.services.sessions import session_end, session_start, session_touch

    key = projects[e["project"]].key
    session_start(agent=agent, session_id=e["id"], project_key=key, machine_key=e["machine"])
    if e["turns"] or e["files"]:
        session_touch(agent=agent, session_id=e["id"], turns=e["turns"], files=e["files"])
    if e["ended"]:
        session_end(agent=agent, session_id=e["id"], reason=e["ended"])
    moment = timezone.now() - timedelta(hours=e["hours_ago"])
    Session.objects.filter(agent=agent, external_id=e["id"]).update(last_activity_at=moment)


def _message(user: Any, agent: Any, projects: dict[str, Any], e: dict[str, Any]) -> None:
    from agents.services.messages import message_send

    message_send(sender=agent, to_agent="claude-code", body=e["body"])


EVENTS = {
    "note": _note,
    "conflict": _conflict,
    "task": _task,
    "memory": _memory,
    "session": _session,
    "message": _message,
}


def brief(loaded: Loaded, focus: str, budget: int) -> Any:
    from knowledge.services.handoff import handoff_build

    return handoff_build(
        user=loaded.user,
        project_key=loaded.projects[focus].key,
        agent=loaded.agent,
        machine_key=loaded.machine,
        token_budget=budget,
    )


def fact_present(fact: dict[str, Any], markdown: str) -> bool:
    text = markdown.lower()
    if "line" in fact:
        wanted = [w.lower() for w in fact["line"]]
        return any(all(w in line for w in wanted) for line in text.splitlines())
    if "all" in fact:
        return all(w.lower() in text for w in fact["all"])
    return any(w.lower() in text for w in fact["any"])


def score(history: dict[str, Any], loaded: Loaded, built: Any) -> dict[str, Any]:
    from knowledge.services.brief import tokens

    items = [
        (name, item) for name, section in built.sections.items() for item in section
    ]  # the JSON's items: each with its ref
    lines = [line for line in built.markdown.splitlines() if line.startswith("- ")]
    focus = loaded.projects[history["focus"]]
    total = sum(tokens(line) for line in lines) or 1
    duplicated = off = 0
    seen_refs: set[str] = set()
    seen_terms: list[set[str]] = []
    for (_, item), line in zip(items, lines, strict=True):
        terms = set(content_terms(line))
        if item["ref"] in seen_refs or any(_inside(terms, t) for t in seen_terms):
            duplicated += tokens(line)
        if not _in_project(item["ref"], focus):
            off += tokens(line)
        seen_refs.add(item["ref"])
        seen_terms.append(terms)
    present = [f["fact"] for f in history["needed"] if fact_present(f, built.markdown)]
    return {
        "needed": len(history["needed"]),
        "present": len(present),
        "missing": [f["fact"] for f in history["needed"] if f["fact"] not in present],
        "facts": len(present) / len(history["needed"]),
        "duplicated": duplicated / total,
        "off_project": off / total,
        "items": len(lines),
        "tokens": built.tokens_used,
    }


def _inside(terms: set[str], earlier: set[str]) -> bool:
    return bool(terms) and len(terms & earlier) / len(terms) >= SAME_WORDS


def _in_project(ref: str, project: Any) -> bool:
    """Whether the record an item names belongs to ``project`` (messages: to the agent)."""
    from agents.models import Session, Task
    from knowledge.models import Entity
    from memory.public import memory_get

    kind, _, ident = ref.partition(":")
    if kind in ("entity", "conflict"):
        return Entity.objects.filter(project=project, key=ident).exists()
    if kind == "task":
        return Task.objects.filter(pk=int(ident), project=project).exists()
    if kind == "session":
        return Session.objects.filter(pk=int(ident), project=project).exists()
    if kind == "memory":
        return bool(memory_get(user=project.user, memory_id=ident).project == project.key)
    return kind == "message"
