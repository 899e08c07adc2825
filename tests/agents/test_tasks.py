"""The task state machine: legal moves only, versions, every attempt recorded, one winner."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from agents.models import Task, TaskTransition
from agents.services.tasks import ALLOWED, TaskConflict, task_create, task_transition
from atlas_platform.exceptions import NotFound, ValidationError
from tests.agents.conftest import register

S = Task.State
ILLEGAL = [(a, b) for a in S.values for b in S.values if b not in ALLOWED[a]]
LEGAL = [(a, b) for a in S.values for b in sorted(ALLOWED[a])]
# How to bring a new task into each state.
ROUTE = {
    S.CREATED: [],
    S.IN_PROGRESS: [S.IN_PROGRESS],
    S.BLOCKED: [S.IN_PROGRESS, S.BLOCKED],
    S.SUSPENDED: [S.IN_PROGRESS, S.SUSPENDED],
    S.COMPLETED: [S.IN_PROGRESS, S.COMPLETED],
    S.FAILED: [S.IN_PROGRESS, S.FAILED],
    S.CANCELLED: [S.CANCELLED],
}


def task_in(agent, state):
    task = task_create(user=agent.user, agent=agent, title="Ship it")
    for step in ROUTE[state]:
        task = task_transition(
            user=agent.user,
            agent=agent,
            task_id=task.pk,
            to_state=step,
            expected_version=task.version,
        )
    assert task.state == state
    return task


@pytest.mark.django_db
@pytest.mark.parametrize(("start", "to"), LEGAL, ids=lambda s: str(s))
def test_every_legal_move_is_applied_and_bumps_the_version(alice_agent, start, to):
    task = task_in(alice_agent, start)

    moved = task_transition(
        user=alice_agent.user,
        agent=alice_agent,
        task_id=task.pk,
        to_state=to,
        expected_version=task.version,
    )

    assert (moved.state, moved.version) == (to, task.version + 1)
    assert TaskTransition.objects.filter(task=task).latest("id").result == "applied"


@pytest.mark.django_db
@pytest.mark.parametrize(("start", "to"), ILLEGAL, ids=lambda s: str(s))
def test_every_illegal_move_is_refused_with_the_current_state_and_recorded(alice_agent, start, to):
    task = task_in(alice_agent, start)

    with pytest.raises(TaskConflict) as refused:
        task_transition(
            user=alice_agent.user,
            agent=alice_agent,
            task_id=task.pk,
            to_state=to,
            expected_version=task.version,
        )

    assert refused.value.status_code == 409 and refused.value.code == "illegal_transition"
    assert refused.value.details["current"] == {
        "id": task.pk,
        "state": start,
        "version": task.version,
        "updated_at": task.updated_at.isoformat(),
    }
    assert f"from {start} to {to}" in refused.value.message
    last = TaskTransition.objects.filter(task=task).latest("id")
    assert (last.from_state, last.to_state, last.result) == (start, to, "illegal")
    assert Task.objects.get(pk=task.pk).state == start


@pytest.mark.django_db
def test_a_stale_version_is_a_conflict_with_the_current_state(alice_agent):
    task = task_in(alice_agent, S.IN_PROGRESS)

    with pytest.raises(TaskConflict) as refused:
        task_transition(
            user=alice_agent.user, task_id=task.pk, to_state=S.COMPLETED, expected_version=1
        )

    assert refused.value.code == "stale_version"
    assert refused.value.details["current"]["version"] == 2
    assert TaskTransition.objects.filter(task=task, result="stale_version").count() == 1


@pytest.mark.django_db
def test_bad_input_and_other_users_tasks_record_nothing(alice_agent, bob):
    bobs = task_create(user=bob, agent=register(bob), title="Bob's")
    mine = task_create(user=alice_agent.user, agent=alice_agent, title="Mine")

    with pytest.raises(NotFound):
        task_transition(
            user=alice_agent.user, task_id=bobs.pk, to_state=S.IN_PROGRESS, expected_version=1
        )
    with pytest.raises(ValidationError):
        task_transition(user=alice_agent.user, task_id=mine.pk, to_state="done", expected_version=1)
    with pytest.raises(NotFound):
        task_create(user=alice_agent.user, title="Child", parent_id=bobs.pk)

    assert TaskTransition.objects.count() == 0
    assert Task.objects.count() == 2


@pytest.mark.django_db(transaction=True)
def test_complete_and_fail_of_one_version_at_once_let_exactly_one_win(alice, alice_agent, bob):
    other = register(alice, "codex")
    task = task_in(alice_agent, S.IN_PROGRESS)
    barrier = threading.Barrier(2)
    results: dict[str, str] = {}

    def attempt(agent, to):
        try:
            barrier.wait(timeout=10)
            task_transition(
                user=alice, agent=agent, task_id=task.pk, to_state=to, expected_version=task.version
            )
            results[to] = "won"
        except TaskConflict as exc:
            results[to] = exc.code
        finally:
            connection.close()

    threads = [
        threading.Thread(target=attempt, args=(alice_agent, S.COMPLETED)),
        threading.Thread(target=attempt, args=(other, S.FAILED)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert sorted(results.values()) == ["stale_version", "won"]
    final = Task.objects.get(pk=task.pk)
    assert final.version == task.version + 1 and final.state in (S.COMPLETED, S.FAILED)
    attempts = TaskTransition.objects.filter(task=task, expected_version=task.version)
    assert sorted(attempts.values_list("result", flat=True)) == ["applied", "stale_version"]
    assert sorted(attempts.values_list("to_state", flat=True)) == ["completed", "failed"]
