"""A moved note keeps its entity: the same row, its history continued by a ``moved``
revision, its old key and path kept as aliases that links, related, entity reads and search
resolve (on every memory backend); a move that lands on a tombstone's key keeps the
tombstone; a move with new content from a stale base moves and keeps the write as a
conflict."""

from __future__ import annotations

import pytest

from knowledge.models import Entity
from knowledge.selectors import (
    entity_edges,
    entity_get,
    entity_revisions,
    graph_blockers,
    graph_related,
    graph_search,
)
from tests.knowledge.conftest import fm, project_of, writer

pytestmark = pytest.mark.services

PLAN = "# Penguin census plan\n\nCount the colony by drone in March.\n"


def kinds(user, project, key):
    return [r.kind for r in entity_revisions(user=user, project_key=project.key, key=key)]


def test_a_move_keeps_the_entity_and_every_link_to_its_old_name_resolves(people):
    alice = people.alice
    project = project_of(alice)
    note = writer(alice, project, "laptop-a")
    first = note("notes/walrus-tally.md", PLAN).entity
    note("notes/budget.md", "# Budget\n\nSee [[walrus-tally]] for the count.\n")
    note("notes/launch.md", fm(status="blocked", blocked_by="note:notes-walrus-tally"))
    moved = note("notes/census.md", PLAN, base=1, moved_from="notes/walrus-tally.md")

    assert moved.outcome == "moved" and moved.entity.pk == first.pk
    entity = Entity.objects.get(pk=first.pk)
    assert (entity.key, entity.path, entity.version) == ("note:notes-census", "notes/census.md", 2)
    assert entity.aliases == [{"key": "note:notes-walrus-tally", "path": "notes/walrus-tally.md"}]
    assert kinds(alice, project, "note:notes-census") == ["created", "moved"]
    assert moved.revision is not None and moved.revision.changed == ["path", "key"]
    assert Entity.objects.filter(project=project).count() == 3  # no new entity

    # The [[wikilink]] and the blocked_by key written to the old name resolve to it.
    budget = entity_get(user=alice, project_key=project.key, key="note:notes-budget")
    assert [(e.label, e.key, e.resolved) for e in entity_edges(entity=budget)] == [
        ("relates_to", "note:notes-census", True)
    ]
    related = graph_related(user=alice, project_key=project.key, key="note:notes-census")
    assert {(s.key, s.label) for s in related.steps} == {
        ("note:notes-budget", "referenced_by"),
        ("note:notes-launch", "blocks"),
    }
    [blocked] = graph_blockers(user=alice, project_key=project.key, stale_days=0)
    assert [(b.key, b.resolved) for b in blocked.blockers] == [("note:notes-census", True)]
    # The old key still reads the entity (and its whole history).
    old = entity_get(user=alice, project_key=project.key, key="note:notes-walrus-tally")
    assert old.pk == first.pk
    # Search finds it by its new and its old name.
    assert graph_search(user=alice, query="penguin census drone")[0].entity.pk == first.pk
    # (its own text never says "walrus": only its old name does)
    assert first.pk in {h.entity.pk for h in graph_search(user=alice, query="walrus tally")}


def test_a_note_with_an_id_at_a_new_path_is_moved_not_duplicated(people):
    alice = people.alice
    project = project_of(alice)
    note = writer(alice, project, "laptop-a")
    text = fm(id="census", title="Census", body="Count them.\n")
    note("docs/census.md", text)
    moved = note("plans/census.md", text, base=1)
    assert moved.outcome == "moved" and moved.entity.key == "census"
    assert moved.entity.path == "plans/census.md"
    assert kinds(alice, project, "census") == ["created", "moved"]
    assert Entity.objects.filter(project=project).count() == 1


def test_a_move_onto_a_tombstones_key_keeps_the_tombstone_restorable(people):
    from knowledge.services.entities import entity_restore
    from knowledge.services.reconcile import reconcile_apply, reconcile_plan

    alice = people.alice
    project = project_of(alice)
    note = writer(alice, project, "laptop-a")
    note("docs/old.md", "# Old\n\nRetired plan.\n")
    note("docs/keep.md", "# Keep\n")
    note("docs/draft.md", PLAN)
    plan = reconcile_plan(  # tombstone docs/old.md (one of three: within the guards)
        user=alice,
        project_key=project.key,
        roots=["docs"],
        files=[{"path": "docs/keep.md"}, {"path": "docs/draft.md"}],
        machine_key="laptop-a",
    )
    reconcile_apply(user=alice, plan_id=str(plan.pk), manifest_hash=plan.manifest_hash)
    moved = note("docs/old.md", PLAN, base=1, moved_from="docs/draft.md")
    assert moved.outcome == "moved" and moved.entity.key == "note:docs-old"
    tombstone = Entity.objects.get(project=project, deleted_at__isnull=False)
    assert tombstone.key.startswith("note:docs-old@replaced-")
    back = entity_restore(user=alice, project_key=project.key, key=tombstone.key)
    assert back.deleted_at is None and back.body.strip() == "# Old\n\nRetired plan."


def test_a_move_with_new_content_from_a_stale_base_moves_and_keeps_the_write_as_a_conflict(
    people,
):
    alice = people.alice
    project = project_of(alice)
    note = writer(alice, project, "laptop-a")
    note("docs/a.md", "# A\n\nOne.\n")
    note("docs/a.md", "# A\n\nTwo.\n", base=1)  # another machine's version 2
    done = note("docs/b.md", "# A\n\nMine.\n", base=1, moved_from="docs/a.md")
    assert done.outcome == "conflict" and done.entity.path == "docs/b.md"
    assert done.entity.body.strip() == "# A\n\nTwo."  # the current version stays
    assert done.conflict_revision is not None and "Mine." in done.conflict_revision.body
    assert kinds(alice, project, "note:docs-b") == ["created", "updated", "moved", "conflict"]
