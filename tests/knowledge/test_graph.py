"""The knowledge graph's services on each backend (embedded, Elasticsearch dls and filter):
edges and revisions, related over a cycle, the semantic diff, conflicts, search and its
isolation, restore."""

from __future__ import annotations

from datetime import timedelta

import pytest

from atlas_platform.exceptions import NotFound, ValidationError
from knowledge.models import Entity, Revision
from knowledge.selectors import (
    entity_edges,
    entity_revisions,
    graph_blockers,
    graph_diff,
    graph_related,
    graph_search,
)
from memory.services.recall import memory_recall
from memory.services.writes import memory_write
from tests.knowledge.conftest import fm, project_of, writer

pytestmark = pytest.mark.services


def edges_of(entity):
    return {(e.label, e.direction, e.key, e.resolved) for e in entity_edges(entity=entity)}


def test_front_matter_and_links_make_edges_and_a_removed_key_removes_its_edge(people, clock):
    project = project_of(people.alice)
    note = writer(people.alice, project)
    body = "Waiting on [[Other Note]] and [the runbook](../ops/runbook.md).\n"
    content = fm(id="plan-x", blocked_by=["a", "b"], depends_on="c", initiative="init-x", body=body)
    first = note("docs/plans/x.md", content)
    assert first.outcome == "created" and first.entity.version == 1
    assert edges_of(first.entity) == {
        ("blocked_by", "out", "a", False),
        ("blocked_by", "out", "b", False),
        ("depends_on", "out", "c", False),
        ("part_of", "out", "init-x", False),
        ("relates_to", "out", "Other Note", False),
        ("relates_to", "out", "docs/ops/runbook.md", False),
    }
    created_at = clock.at
    clock.advance(hours=1)
    second = note("docs/plans/x.md", fm(id="plan-x", blocked_by="a", body=body), base=1)
    assert second.outcome == "updated" and second.entity.version == 2
    assert second.revision is not None
    assert second.revision.edges_removed == [
        ["blocked_by", "b"],
        ["depends_on", "c"],
        ["part_of", "init-x"],
    ]
    assert second.revision.edges_added == []
    entity = Entity.objects.get(pk=first.entity.pk)
    assert entity.body == body and "initiative" in second.revision.changed
    # Dangling targets resolve when they appear: by key, by file name, by path.
    clock.advance(hours=1)
    note("tasks/a.md", fm(id="a", status="open", body="Task a.\n"))
    note("notes/other note.md", "# Other Note\n\nSomething.\n")
    note("docs/ops/runbook.md", "# Runbook\n")
    assert edges_of(entity) == {
        ("blocked_by", "out", "a", True),
        ("relates_to", "out", "note:notes-other-note", True),
        ("relates_to", "out", "note:docs-ops-runbook", True),
    }
    blocker = Entity.objects.get(project=project, key="a")
    assert edges_of(blocker) == {("blocks", "in", "plan-x", True)}
    # The graph as of the first revision still has the removed edges.
    from knowledge.graph import project_graph

    then = project_graph(project, at=created_at)
    assert {(link.label, link.target) for link in then.out[entity.pk]} >= {
        ("blocked_by", "b"),
        ("depends_on", "c"),
    }
    kinds = [
        r.kind for r in entity_revisions(user=people.alice, project_key=project.key, key="plan-x")
    ]
    assert kinds == ["created", "updated"]


def test_related_to_depth_two_over_a_cycle_ends_and_names_inverse_labels(people):
    project = project_of(people.alice)
    note = writer(people.alice, project)
    note("a.md", fm(id="a", blocked_by="b"))
    note("b.md", fm(id="b", depends_on="c"))
    note("c.md", fm(id="c", blocked_by="a"))
    note("d.md", fm(id="d", initiative="a"))
    found = graph_related(user=people.alice, project_key=project.key, key="a", depth=2)
    reached = {(s.key, s.depth, s.label, s.direction) for s in found.steps}
    assert reached == {
        ("b", 1, "blocked_by", "out"),
        ("c", 1, "blocks", "in"),
        ("d", 1, "has_part", "in"),
    }
    assert len({s.key for s in found.steps}) == len(found.steps)
    assert {(a, b, label) for a, b, label, _ in found.edges} == {
        ("a", "b", "blocked_by"),
        ("c", "a", "blocked_by"),
        ("d", "a", "part_of"),
        ("b", "c", "depends_on"),
    }
    one = graph_related(user=people.alice, project_key=project.key, key="b", depth=1)
    assert {(s.key, s.label) for s in one.steps} == {("c", "depends_on"), ("a", "blocks")}


def test_related_names_an_entity_as_front_matter_does_key_path_stem_or_title(people):
    project = project_of(people.alice)
    note = writer(people.alice, project)
    note("docs/plans/launch-plan.md", fm(id="plan-launch", title="The Launch Plan", blocked_by="b"))
    note("docs/b.md", fm(id="b", title="Shared"))
    note("docs/c.md", fm(id="c", title="Shared"))

    def root(name):
        found = graph_related(user=people.alice, project_key=project.key, key=name)
        return found.root.key

    names = ("plan-launch", "docs/plans/launch-plan.md", "launch-plan", "LAUNCH-PLAN.md")
    for name in names:
        assert root(name) == "plan-launch", name
    assert root("the launch plan") == "plan-launch"
    with pytest.raises(ValidationError) as twice:
        root("Shared")
    with pytest.raises(NotFound):
        root("no such note")
    assert twice.value.code == "ambiguous_entity"


def test_a_diff_reports_a_transition_completion_and_rewrite_and_nothing_for_a_quiet_range(
    people, clock
):
    project = project_of(people.alice)
    note = writer(people.alice, project)
    start = clock.at
    note(
        "x.md",
        fm(
            id="x",
            status="blocked",
            blocked_by="y",
            body="We migrate the billing database from MySQL to PostgreSQL with logical "
            "replication, then switch the application's connection strings.\n",
        ),
    )
    note("y.md", fm(id="y", status="open", body="Approve the migration window.\n"))
    note("z.md", fm(id="z", status="open", body="Write the weekly status report for the team.\n"))
    clock.advance(days=1)
    since = clock.at
    clock.advance(days=1)
    note(
        "x.md",
        fm(
            id="x",
            status="done",
            body="The office plants need watering twice a week; a volunteer rota is on the "
            "kitchen door.\n",
        ),
        base=1,
    )
    note(
        "z.md",
        fm(id="z", status="open", body="Write the weekly status report for the whole team.\n"),
        base=1,
    )
    clock.advance(days=1)
    until = clock.at
    diff = graph_diff(user=people.alice, project_key=project.key, since=since, until=until)
    assert diff.status_changes == [{"key": "x", "from": "blocked", "to": "done"}]
    assert diff.completed == ["x"]
    assert [r["key"] for r in diff.rewritten] == ["x"]
    assert diff.unblocked == ["x"] and diff.newly_blocked == []
    assert diff.edges_removed == [{"from": "x", "label": "blocked_by", "to": "y"}]
    assert diff.created == [] and diff.deleted == []
    whole = graph_diff(
        user=people.alice, project_key=project.key, since=start - timedelta(hours=1), until=until
    )
    assert whole.created == ["x", "y", "z"]
    clock.advance(days=2)
    quiet = graph_diff(user=people.alice, project_key=project.key, since=until, until=clock.at)
    assert all(
        getattr(quiet, name) == []
        for name in (
            "created",
            "deleted",
            "restored",
            "status_changes",
            "newly_blocked",
            "unblocked",
            "completed",
            "edges_added",
            "edges_removed",
            "rewritten",
        )
    )


def test_two_machines_writing_from_the_same_base_keep_one_version_and_one_conflict(people):
    project = project_of(people.alice)
    note = writer(people.alice, project)
    note("plan.md", fm(id="plan", status="open", body="v1\n"))
    laptop = note(
        "plan.md", fm(id="plan", status="open", body="laptop edit\n"), base=1, machine_key="laptop"
    )
    desktop = note(
        "plan.md",
        fm(id="plan", status="open", body="desktop edit\n"),
        base=1,
        machine_key="desktop",
    )
    assert laptop.outcome == "updated" and desktop.outcome == "conflict"
    entity = Entity.objects.get(project=project, key="plan")
    assert entity.version == 2 and entity.body == "laptop edit\n" and entity.conflicted
    revisions = list(entity.revisions.order_by("number"))
    assert [(r.kind, r.version, r.machine) for r in revisions] == [
        ("created", 1, ""),
        ("updated", 2, "laptop"),
        ("conflict", 2, "desktop"),
    ]
    assert revisions[-1].body == "desktop edit\n" and revisions[-1].base_version == 1
    merged = note("plan.md", fm(id="plan", status="open", body="merged\n"), base=2)
    assert merged.outcome == "updated" and not merged.entity.conflicted
    # Never indexed here (no base) with other content than the server's: a conflict too.
    blind = note("plan.md", fm(id="plan", status="open", body="stale checkout\n"))
    assert blind.outcome == "conflict"
    same = note("plan.md", fm(id="plan", status="open", body="merged\n"))
    assert same.outcome == "unchanged" and same.entity.version == 3


def test_search_is_hybrid_per_user_and_never_leaks_across_users_tenants_or_into_recall(people):
    alice_project = project_of(people.alice)
    alice = writer(people.alice, alice_project)
    alice(
        "adr/cache.md",
        fm(
            type="decision",
            status="accepted",
            body="We cache the pricing table in Redis with a 5 minute TTL.\n",
        ),
    )
    alice(
        "adr/queue.md",
        fm(
            type="decision",
            status="proposed",
            body="Background jobs move from cron to a Celery queue.\n",
        ),
    )
    for user in (people.bob, people.charlie):
        other = writer(user, project_of(user))
        other(
            "adr/cache.md",
            fm(
                type="decision",
                status="accepted",
                body="We cache the pricing table in Redis with a 5 minute TTL.\n",
            ),
        )
    hits = graph_search(user=people.alice, query="pricing cache redis ttl")
    assert hits and {h.entity.user_id for h in hits} == {people.alice.pk}
    assert hits[0].entity.key == "decision:adr-cache"
    semantic = graph_search(user=people.alice, query="asynchronous task workers")
    assert semantic[0].entity.key == "decision:adr-queue"  # no shared words: the dense leg
    only = graph_search(user=people.alice, query="pricing cache", statuses=["proposed"])
    assert [h.entity.key for h in only] == ["decision:adr-queue"]
    assert graph_search(user=people.alice, query="pricing", types=["plan"]) == []
    for user in (people.bob, people.charlie):
        mine = graph_search(user=user, query="pricing cache redis ttl")
        assert mine and {h.entity.user_id for h in mine} == {user.pk}
    memory_write(user=people.alice, text="I prefer tea to coffee.", memory_type="semantic")
    recalled = memory_recall(user=people.alice, query="pricing cache redis", k=10)
    assert {h.doc.memory_type for h in recalled.hits} <= {"semantic"}
    assert all("pricing" not in h.doc.text for h in recalled.hits)


def test_a_team_visible_project_is_searchable_by_its_tenant_only(people):
    shared = project_of(people.alice, remote="git@github.com:acme/shared.git", team_visible=True)
    writer(people.alice, shared)("plan.md", fm(body="Roll out the feature flag service.\n"))
    bob = graph_search(user=people.bob, query="feature flag service", project_key=shared.key)
    assert [h.entity.key for h in bob] == ["note:plan"]
    assert graph_search(user=people.bob, query="feature flag service", include_team=True)
    assert graph_search(user=people.bob, query="feature flag service") == []
    from atlas_platform.exceptions import NotFound

    with pytest.raises(NotFound):
        graph_search(user=people.charlie, query="feature flag", project_key=shared.key)
    assert graph_search(user=people.charlie, query="feature flag service", include_team=True) == []


def test_blockers_are_those_whose_blocker_has_not_moved(people, clock):
    project = project_of(people.alice)
    note = writer(people.alice, project)
    note("a.md", fm(id="a", status="blocked", blocked_by="b"))
    note("b.md", fm(id="b", status="open"))
    note("c.md", fm(id="c", status="waiting"))
    note("d.md", fm(id="d", blocked_by="done-one"))
    note("e.md", fm(id="done-one", status="done"))
    clock.advance(days=4)
    note("f.md", fm(id="f", blocked_by="missing"))
    found = graph_blockers(user=people.alice, project_key=project.key, stale_days=3)
    assert {(b.entity.key, tuple(x.key for x in b.blockers)) for b in found} == {
        ("a", ("b",)),
        ("c", ("c",)),
    }
    clock.advance(days=1)
    note("b.md", fm(id="b", status="in_progress"), base=1)  # the blocker moved
    clock.advance(days=3)
    found = graph_blockers(user=people.alice, project_key=project.key, stale_days=3)
    assert {b.entity.key for b in found} == {"a", "c", "f"}
    assert {
        b.entity.key
        for b in graph_blockers(user=people.alice, project_key=project.key, stale_days=5)
    } == {"c"}


def test_revisions_survive_in_the_searchable_store_only_as_the_current_version(people):
    project = project_of(people.alice)
    note = writer(people.alice, project)
    note("n.md", "# Zebra crossings\n\nZebra crossings near the school.\n")
    note("n.md", "# Giraffes\n\nGiraffes at the zoo.\n", base=1)
    assert graph_search(user=people.alice, query="giraffes zoo")[0].entity.key == "note:n"
    assert all(
        "Zebra" not in h.entity.title for h in graph_search(user=people.alice, query="zebra")
    )
    assert Revision.objects.filter(entity__project=project).count() == 2
