"""Tasks and their state machine. A transition names the version it expects: a stale one is a
conflict with the current state, so two machines cannot both complete and fail one task. Every
attempt, applied or refused, is recorded as a ``TaskTransition``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import transaction

from agents.models import Agent, Task, TaskTransition
from agents.selectors import own_project, task_get
from agents.services.common import audit, clean_tags, now
from atlas_platform.exceptions import Conflict, ValidationError
from tenants.models import User
from tenants.services.validation import validate

S = Task.State
TERMINAL = frozenset({S.COMPLETED, S.FAILED, S.CANCELLED})
# created -> in progress <-> blocked / suspended -> completed / failed / cancelled
ALLOWED: dict[str, frozenset[str]] = {
    S.CREATED: frozenset({S.IN_PROGRESS, S.CANCELLED}),
    S.IN_PROGRESS: frozenset({S.BLOCKED, S.SUSPENDED, S.COMPLETED, S.FAILED, S.CANCELLED}),
    S.BLOCKED: frozenset({S.IN_PROGRESS, S.FAILED, S.CANCELLED}),
    S.SUSPENDED: frozenset({S.IN_PROGRESS, S.CANCELLED}),
    **{state: frozenset() for state in TERMINAL},
}
MAX_TEXT = 20_000


class TaskConflict(Conflict):
    """A refused transition: 409 with the task's current state and version."""


def task_state(task: Task) -> dict[str, Any]:
    """What a refused transition answers with: the server's state of the task."""
    return {
        "id": task.pk,
        "state": task.state,
        "version": task.version,
        "updated_at": task.updated_at.isoformat(),
    }


def task_create(
    *,
    user: User,
    title: str,
    agent: Agent | None = None,
    description: str = "",
    priority: str = Task.Priority.NORMAL,
    tags: Sequence[str] = (),
    parent_id: int | None = None,
    project_key: str | None = None,
) -> Task:
    """A new task (state ``created``, version 1), optionally the acting agent's, under a
    parent task and in a project of the user."""
    if len(description) > MAX_TEXT:
        raise ValidationError(f"description: at most {MAX_TEXT} characters.", code="too_long")
    parent = task_get(user=user, task_id=parent_id) if parent_id is not None else None
    project = own_project(user=user, key=project_key) if project_key else None
    moment = now()
    task = Task(
        user=user,
        agent=agent,
        title=title.strip(),
        description=description,
        priority=priority,
        tags=clean_tags(tags),
        parent=parent,
        project=project,
        created_at=moment,
        updated_at=moment,
    )
    validate(task, exclude=["user", "agent", "parent", "project"])
    with transaction.atomic():
        task.save()
        audit("task.create", user=user, target=task, agent=agent, parent=parent_id)
    return task


def task_transition(
    *,
    user: User,
    task_id: int,
    to_state: str,
    expected_version: int,
    agent: Agent | None = None,
    outcome: str | None = None,
) -> Task:
    """Move the task to ``to_state`` if it is at ``expected_version`` and the move is legal;
    otherwise a ``TaskConflict`` (409) carrying the current state. The attempt is recorded
    either way; the row lock makes concurrent attempts on one version take turns."""
    if to_state not in S.values:
        raise ValidationError(
            f"to_state must be one of {', '.join(S.values)}.", code="bad_state", field="to_state"
        )
    if outcome is not None and len(outcome) > MAX_TEXT:
        raise ValidationError(f"outcome: at most {MAX_TEXT} characters.", code="too_long")
    task_get(user=user, task_id=task_id)  # another user's task: not found, nothing recorded
    with transaction.atomic():
        task = Task.objects.select_for_update().get(pk=task_id)
        if task.version != expected_version:
            result = TaskTransition.Result.STALE
        elif to_state not in ALLOWED[task.state]:
            result = TaskTransition.Result.ILLEGAL
        else:
            result = TaskTransition.Result.APPLIED
        TaskTransition.objects.create(
            task=task,
            agent=agent,
            from_state=task.state,
            to_state=to_state,
            expected_version=expected_version,
            result=result,
            created_at=now(),
        )
        if result == TaskTransition.Result.APPLIED:
            _apply(task, to_state, agent, outcome)
    if result == TaskTransition.Result.STALE:
        raise TaskConflict(
            f"Task {task_id} is at version {task.version}, not {expected_version}.",
            code="stale_version",
            current=task_state(task),
        )
    if result == TaskTransition.Result.ILLEGAL:
        raise TaskConflict(
            f"A task cannot go from {task.state} to {to_state}.",
            code="illegal_transition",
            current=task_state(task),
        )
    return task


def _apply(task: Task, to_state: str, agent: Agent | None, outcome: str | None) -> None:
    before = task.state
    task.state = to_state
    task.version += 1
    task.updated_at = now()
    if outcome is not None:
        task.outcome = outcome
    if agent is not None:
        task.agent = agent
    task.save(update_fields=["state", "version", "updated_at", "outcome", "agent"])
    audit(
        "task.transition",
        user=task.user,
        target=task,
        agent=agent,
        from_state=before,
        to_state=to_state,
        version=task.version,
    )
