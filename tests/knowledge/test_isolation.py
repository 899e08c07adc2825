"""Isolation probes on each backend: Alice, Bob (same tenant) and Charlie (another tenant) keep
notes with the same paths and keys in checkouts of the same repository (so the same project
key). Search, related, blockers, diff, handoff and reconcile each see the caller's own only."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from knowledge.models import Entity
from knowledge.selectors import (
    entity_get,
    graph_blockers,
    graph_diff,
    graph_related,
    graph_search,
)
from knowledge.services.handoff import handoff_build
from knowledge.services.reconcile import reconcile_apply, reconcile_plan
from memory.services.writes import memory_write
from tests.knowledge.conftest import fm, project_of, writer

MACHINE = "laptop"

pytestmark = pytest.mark.services


def marker(name: str) -> str:
    return f"secret-{name}-zanzibar"


@pytest.fixture
def three(people):
    projects = {}
    for user in (people.alice, people.bob, people.charlie):
        project = project_of(user)
        note = writer(user, project, MACHINE)
        word = marker(user.external_id)
        note(
            "docs/a.md",
            fm(id="a", status="blocked", blocked_by="b", body=f"Zanzibar rollout plan {word}.\n"),
        )
        note("docs/b.md", fm(id="b", status="open", body=f"Zanzibar approval {word}.\n"))
        memory_write(user=user, text=f"Zanzibar memory {word}", memory_type="semantic")
        projects[user.external_id] = project
    return projects


def test_every_query_sees_only_the_callers_notes(people, three):
    key = three["alice"].key
    assert three["bob"].key == three["charlie"].key == key  # the same repository
    for user in (people.alice, people.bob, people.charlie):
        own = marker(user.external_id)
        others = [marker(n) for n in ("alice", "bob", "charlie") if n != user.external_id]
        seen = [
            repr(
                [
                    (h.entity.user_id, h.entity.body)
                    for h in graph_search(user=user, query="zanzibar rollout")
                ]
            ),
            repr(
                [
                    (h.entity.user_id, h.entity.body)
                    for h in graph_search(user=user, query="zanzibar", include_team=True)
                ]
            ),
            repr(
                [
                    (s.node.title if s.node else None, s.key)
                    for s in graph_related(user=user, project_key=key, key="a", depth=2).steps
                ]
            ),
            repr(graph_related(user=user, project_key=key, key="a").root.body),
            repr(entity_get(user=user, project_key=key, key="b").body),
            repr([b.entity.key for b in graph_blockers(user=user, project_key=key, stale_days=0)]),
            repr(
                graph_diff(
                    user=user,
                    project_key=key,
                    since=timezone.now() - timedelta(days=1),
                    until=timezone.now() + timedelta(days=1),
                )
            ),
            handoff_build(user=user, project_key=key, token_budget=8000).markdown,
        ]
        text = "\n".join(seen)
        assert own in text
        assert not any(o in text for o in others), (user.external_id, text)
        hits = graph_search(user=user, query="zanzibar rollout")
        assert {h.entity.user_id for h in hits} == {user.pk}


def test_a_reconcile_of_one_user_never_touches_another_users_notes(people, three):
    key = three["alice"].key
    plan = reconcile_plan(
        machine_key=MACHINE,
        user=people.alice,
        project_key=key,
        roots=["docs"],
        files=[{"path": "docs/a.md"}],
    )
    assert [c["key"] for c in plan.candidates] == ["b"]
    reconcile_apply(user=people.alice, plan_id=str(plan.pk), manifest_hash=plan.manifest_hash)
    alive = dict(
        Entity.objects.filter(key="b", deleted_at=None).values_list("user_id", "project_id")
    )
    assert set(alive) == {people.bob.pk, people.charlie.pk}
    assert graph_search(user=people.bob, query="zanzibar approval")[0].entity.key == "b"
    assert graph_search(user=people.charlie, query="zanzibar approval")[0].entity.key == "b"


PROBES = ("papaya", "quokka", "walrus", "zephyr")  # Bob's private notes hold the first two


def test_a_teammates_private_notes_never_move_the_rank_of_a_note_the_caller_may_read(people):
    """The probe: Alice searches Bob's team-visible note with a chosen word beside words it
    holds. Ranked against Bob's private notes, the note's score drops exactly when a private
    note holds the word (it was found 4 of 4 times); ranked against what Alice may read only,
    the score is the same whatever the word."""
    shared = project_of(people.bob, "git@github.com:acme/team.git", team_visible=True)
    private = project_of(people.bob, "git@github.com:bob/diary.git")
    writer(people.bob, shared)("docs/budget.md", fm(id="budget", body="Budget review notes.\n"))
    note = writer(people.bob, private)
    for n, word in enumerate(PROBES[:2]):
        note(f"docs/p{n}.md", fm(id=f"p{n}", body=f"Budget {word} {word} plans, private.\n"))

    scores = {}
    for word in PROBES:
        hits = graph_search(user=people.alice, query=f"budget {word}", include_team=True)
        assert [h.entity.key for h in hits] == ["budget"]  # never a private note
        scores[word] = hits[0].score

    told = {w for w in PROBES if scores[w] < max(scores.values())}
    assert told == set(), scores
