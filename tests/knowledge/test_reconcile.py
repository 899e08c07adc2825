"""Reconcile in two phases: the guards refuse and delete nothing; only the manifest's project
and roots are candidates; a stale plan is refused; a tombstone is restored with its history."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest

from atlas_platform.exceptions import AtlasError, Conflict, NotFound
from knowledge.models import Entity, ReconcileRun
from knowledge.selectors import entity_edges, graph_search
from knowledge.services.entities import entity_restore
from knowledge.services.reconcile import reconcile_apply, reconcile_plan
from tenants.models import AuditEvent
from tests.knowledge.conftest import fm, project_of, writer

MACHINE = "laptop"

pytestmark = pytest.mark.services


def files(*paths: str) -> list[dict[str, str]]:
    return [{"path": p, "hash": "0" * 64} for p in paths]


@pytest.fixture
def layout(alice, bob, store):
    """Alice's app: docs/ (5 notes) and notes/ (2); her other project and Bob's project have
    notes under docs/ too."""
    app = project_of(alice)
    note = writer(alice, app, MACHINE)
    for n in range(5):
        note(f"docs/d{n}.md", fm(body=f"doc {n}\n"))
    note("notes/n0.md", "n0\n")
    note("notes/n1.md", "n1\n")
    other = project_of(alice, remote="git@github.com:acme/other.git")
    writer(alice, other, MACHINE)("docs/d4.md", "other project\n")
    writer(bob, project_of(bob), MACHINE)("docs/d4.md", "bob's\n")
    return app


def live(project) -> set[str]:
    return set(
        Entity.objects.filter(project=project, deleted_at=None).values_list("path", flat=True)
    )


def refused(code: str, **kw) -> None:
    with pytest.raises(AtlasError) as caught:
        reconcile_plan(**{"machine_key": MACHINE, **kw})
    assert caught.value.code == code, caught.value


def test_the_guards_refuse_and_nothing_is_deleted(alice, layout):
    before = Entity.objects.filter(deleted_at=None).count()
    key = layout.key
    refused("empty_manifest", user=alice, project_key=key, roots=["docs"], files=[])
    # notes/ is declared but lists nothing while it holds entities (an unmounted folder).
    refused(
        "root_has_no_files",
        user=alice,
        project_key=key,
        roots=["docs", "notes"],
        files=files("docs/d0.md", "docs/d1.md", "docs/d2.md", "docs/d3.md", "docs/d4.md"),
    )
    # The client runs in the wrong directory: files exist, none of them is a known note.
    refused(
        "manifest_matches_nothing",
        user=alice,
        project_key=key,
        roots=["docs"],
        files=files("docs/readme.md", "docs/other/x.md"),
    )
    # 3 of 5 (60 %) gone.
    refused(
        "too_many_deletions",
        user=alice,
        project_key=key,
        roots=["docs"],
        files=files("docs/d0.md", "docs/d1.md"),
    )
    with pytest.raises(AtlasError) as caught:
        reconcile_plan(
            machine_key=MACHINE, user=alice, project_key=key, roots=["docs"], files=files("../x.md")
        )
    assert caught.value.code == "bad_path"
    assert Entity.objects.filter(deleted_at=None).count() == before
    assert not ReconcileRun.objects.exists()


def test_only_the_missing_docs_of_that_project_are_candidates(alice, bob, layout):
    present = files("docs/d0.md", "docs/d1.md", "docs/d2.md", "docs/d3.md")
    plan = reconcile_plan(
        machine_key=MACHINE, user=alice, project_key=layout.key, roots=["docs/"], files=present
    )
    assert [c["path"] for c in plan.candidates] == ["docs/d4.md"]
    assert plan.entities_under_roots == 5
    receipt = reconcile_apply(user=alice, plan_id=str(plan.pk), manifest_hash=plan.manifest_hash)
    assert receipt.status == "applied" and receipt.deleted == ["note:docs-d4"]
    assert live(layout) == {f"docs/d{n}.md" for n in range(4)} | {"notes/n0.md", "notes/n1.md"}
    # The other project and the other user keep their docs/d4.md.
    assert Entity.objects.filter(path="docs/d4.md", deleted_at=None).count() == 2
    assert AuditEvent.objects.filter(action="reconcile.apply", target_id=str(plan.pk)).exists()
    # Bob cannot apply, or even see, Alice's plan. The same repository's key names his own
    # project for him: his plan reads his entities only.
    with pytest.raises(NotFound):
        reconcile_apply(user=bob, plan_id=str(plan.pk), manifest_hash=plan.manifest_hash)
    his = reconcile_plan(
        machine_key=MACHINE,
        user=bob,
        project_key=layout.key,
        roots=["docs"],
        files=files("docs/d4.md"),
    )
    assert his.project.user_id == bob.pk and his.candidates == [] and his.entities_under_roots == 1
    assert ReconcileRun.objects.get(pk=plan.pk).status == "applied"  # not superseded by Bob's


def test_a_forced_plan_may_delete_more_and_a_stale_plan_is_refused(alice, layout):
    two = files("docs/d0.md", "docs/d1.md")
    first = reconcile_plan(
        machine_key=MACHINE,
        user=alice,
        project_key=layout.key,
        roots=["docs"],
        files=two,
        force=True,
    )
    assert len(first.candidates) == 3
    second = reconcile_plan(
        machine_key=MACHINE,
        user=alice,
        project_key=layout.key,
        roots=["docs"],
        files=two,
        force=True,
    )
    with pytest.raises(Conflict) as caught:  # superseded by the newer plan
        reconcile_apply(user=alice, plan_id=str(first.pk), manifest_hash=first.manifest_hash)
    assert caught.value.code == "stale_plan"
    with pytest.raises(Conflict):  # another manifest
        reconcile_apply(user=alice, plan_id=str(second.pk), manifest_hash="f" * 64)
    # A candidate changed after the plan: refused, nothing deleted.
    writer(alice, layout, MACHINE)("docs/d4.md", fm(body="edited again\n"), base=1)
    with pytest.raises(Conflict):
        reconcile_apply(user=alice, plan_id=str(second.pk), manifest_hash=second.manifest_hash)
    assert len(live(layout)) == 7
    third = reconcile_plan(
        machine_key=MACHINE,
        user=alice,
        project_key=layout.key,
        roots=["docs"],
        files=two,
        force=True,
    )
    reconcile_apply(user=alice, plan_id=str(third.pk), manifest_hash=third.manifest_hash)
    with pytest.raises(Conflict):  # applied already
        reconcile_apply(user=alice, plan_id=str(third.pk), manifest_hash=third.manifest_hash)
    assert live(layout) == {"docs/d0.md", "docs/d1.md", "notes/n0.md", "notes/n1.md"}


def test_an_expired_plan_is_refused(alice, layout, settings):
    settings.ATLAS_RECONCILE_PLAN_TTL_S = 0
    plan = reconcile_plan(
        machine_key=MACHINE,
        user=alice,
        project_key=layout.key,
        roots=["docs"],
        files=files(*(f"docs/d{n}.md" for n in range(4))),
    )
    with pytest.raises(Conflict):
        reconcile_apply(user=alice, plan_id=str(plan.pk), manifest_hash=plan.manifest_hash)


def test_a_tombstone_is_restored_with_its_history_and_is_searchable_again(people):
    project = project_of(people.alice)
    note = writer(people.alice, project, MACHINE)
    note("docs/a.md", fm(id="a", blocked_by="b", body="Quarterly penguin census results.\n"))
    note("docs/b.md", fm(id="b", body="Counting method.\n"))
    note("docs/c.md", fm(id="c", body="Keep.\n"))
    plan = reconcile_plan(
        machine_key=MACHINE,
        user=people.alice,
        project_key=project.key,
        roots=["docs"],
        files=files("docs/b.md", "docs/c.md"),
    )
    reconcile_apply(user=people.alice, plan_id=str(plan.pk), manifest_hash=plan.manifest_hash)
    assert all(h.entity.key != "a" for h in graph_search(user=people.alice, query="penguin census"))
    restored = entity_restore(user=people.alice, project_key=project.key, key="a")
    assert restored.deleted_at is None and restored.version == 3
    assert [r.kind for r in restored.revisions.order_by("number")] == [
        "created",
        "deleted",
        "restored",
    ]
    assert {(e.label, e.key) for e in entity_edges(entity=restored)} == {("blocked_by", "b")}
    assert graph_search(user=people.alice, query="penguin census")[0].entity.key == "a"


def test_a_tombstone_older_than_the_restore_window_is_not_restorable(alice, layout):
    plan = reconcile_plan(
        machine_key=MACHINE,
        user=alice,
        project_key=layout.key,
        roots=["docs"],
        files=files(*(f"docs/d{n}.md" for n in range(4))),
    )
    reconcile_apply(user=alice, plan_id=str(plan.pk), manifest_hash=plan.manifest_hash)
    entity = Entity.objects.get(project=layout, path="docs/d4.md")
    assert entity.deleted_at is not None
    Entity.objects.filter(pk=entity.pk).update(deleted_at=entity.deleted_at - timedelta(days=31))
    with pytest.raises(Conflict) as caught:
        entity_restore(user=alice, project_key=layout.key, key=entity.key)
    assert caught.value.code == "not_restorable"


def test_a_checkout_behind_deletes_nothing_it_has_not_seen_and_says_why(alice, store):
    """Machine B's checkout lacks the two notes A wrote since: they are kept, not deleted,
    each with the reason; once B indexed one of them, B may delete that one."""
    project = project_of(alice)
    on_a, on_b = writer(alice, project, "laptop-a"), writer(alice, project, "desktop-b")
    for n in range(3):
        on_a(f"docs/shared{n}.md", f"shared {n}\n")
        on_b(f"docs/shared{n}.md", f"shared {n}\n")  # unchanged: B has them too
    on_a("docs/new1.md", "A's new note\n")
    on_a("docs/new2.md", "A's other new note\n")
    shared = files(*(f"docs/shared{n}.md" for n in range(3)))

    plan = reconcile_plan(
        user=alice, project_key=project.key, roots=["docs"], files=shared, machine_key="desktop-b"
    )
    assert plan.candidates == [] and plan.moves == []
    assert [(k["path"], k["reason"]) for k in plan.kept] == [
        ("docs/new1.md", "not_seen"),
        ("docs/new2.md", "not_seen"),
    ]
    assert "laptop-a" in plan.kept[0]["why"] and "behind" in plan.kept[0]["why"]
    reconcile_apply(user=alice, plan_id=str(plan.pk), manifest_hash=plan.manifest_hash)
    assert live(project) >= {"docs/new1.md", "docs/new2.md"}

    anonymous = reconcile_plan(user=alice, project_key=project.key, roots=["docs"], files=shared)
    assert anonymous.candidates == [] and {k["reason"] for k in anonymous.kept} == {"no_machine"}

    on_b("docs/new1.md", "A's new note\n")  # B pulled and indexed it, then deleted the file
    seen = reconcile_plan(
        user=alice, project_key=project.key, roots=["docs"], files=shared, machine_key="desktop-b"
    )
    assert [(c["path"], c["reason"]) for c in seen.candidates] == [
        ("docs/new1.md", "missing_and_seen")
    ]
    assert [k["path"] for k in seen.kept] == ["docs/new2.md"]
    # A, which wrote both, may delete both (2 of 5 is above 10 %: it takes force).
    refused(
        "too_many_deletions",
        user=alice,
        project_key=project.key,
        roots=["docs"],
        files=shared,
        machine_key="laptop-a",
    )


def test_a_later_version_from_another_machine_is_not_deleted_by_the_first(alice, store):
    project = project_of(alice)
    on_a, on_b = writer(alice, project, "laptop-a"), writer(alice, project, "desktop-b")
    on_a("docs/keep.md", "keep\n")
    on_a("docs/plan.md", "v1\n")
    on_b("docs/plan.md", "v2 from B\n", base=1)
    plan = reconcile_plan(
        user=alice,
        project_key=project.key,
        roots=["docs"],
        files=files("docs/keep.md"),
        machine_key="laptop-a",
    )
    assert plan.candidates == [] and [k["reason"] for k in plan.kept] == ["not_seen"]
    assert "desktop-b" in plan.kept[0]["why"]


def test_reconcile_moves_a_note_found_by_content_or_by_id_instead_of_deleting_it(alice, store):
    project = project_of(alice)
    note = writer(alice, project, MACHINE)
    note("docs/keep.md", "keep\n")
    moved_text = "# Walrus tally\n\nCount them.\n"
    note("docs/tally.md", moved_text)
    note("docs/census.md", fm(id="census", body="Census.\n"))
    note("docs/index.md", "See [[tally]] and [[census]].\n")
    manifest = [
        {"path": "docs/keep.md", "hash": "0" * 64},
        {"path": "docs/index.md", "hash": "0" * 64},
        {"path": "notes/walrus.md", "hash": hashlib.sha256(moved_text.encode()).hexdigest()},
        {"path": "notes/census.md", "hash": "1" * 64, "id": "census"},  # edited as well
    ]
    plan = reconcile_plan(
        user=alice, project_key=project.key, roots=[""], files=manifest, machine_key=MACHINE
    )
    assert plan.candidates == [] and plan.kept == []
    assert [(m["key"], m["to"]) for m in plan.moves] == [
        ("census", "notes/census.md"),
        ("note:docs-tally", "notes/walrus.md"),
    ]
    receipt = reconcile_apply(user=alice, plan_id=str(plan.pk), manifest_hash=plan.manifest_hash)
    assert receipt.deleted == [] and receipt.moved == [
        {"before": "census", "key": "census"},
        {"before": "note:docs-tally", "key": "note:notes-walrus"},
    ]
    walrus = Entity.objects.get(key="note:notes-walrus")
    assert walrus.path == "notes/walrus.md" and walrus.deleted_at is None
    assert [r.kind for r in walrus.revisions.order_by("number")] == ["created", "moved"]
    index = Entity.objects.get(key="note:docs-index")
    assert {(e.key, e.resolved) for e in entity_edges(entity=index)} == {
        ("note:notes-walrus", True),
        ("census", True),
    }


def test_an_entity_written_before_sightings_were_kept_is_seen_through_its_last_revision(
    alice, layout
):
    Entity.objects.update(seen_by={})  # as rows written before Entity.seen_by existed
    plan = reconcile_plan(
        user=alice,
        project_key=layout.key,
        roots=["docs"],
        files=files(*(f"docs/d{n}.md" for n in range(4))),
        machine_key=MACHINE,
    )
    assert [(c["path"], c["reason"]) for c in plan.candidates] == [
        ("docs/d4.md", "missing_and_seen")
    ]
    other = reconcile_plan(
        user=alice,
        project_key=layout.key,
        roots=["docs"],
        files=files(*(f"docs/d{n}.md" for n in range(4))),
        machine_key="someone-else",
    )
    assert other.candidates == [] and [k["reason"] for k in other.kept] == ["not_seen"]
