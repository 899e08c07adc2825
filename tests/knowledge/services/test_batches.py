"""A block of upserts at once (``entities_upsert`` inside ``entity_upserts_together``, what a
batch's run of ``entity.upsert`` operations does): the statements a block takes, and those of
the whole operations batch (its claims and answers too), do not grow with its notes; and every
note ends as ``entity_upsert`` one by one leaves it (outcomes, versions, revisions, edges, audit
events, seen machines), the cases this path leaves alone (a move, a tombstone written again,
two notes of one key) included."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from agents.api.operations import parse_operation
from agents.services.agents import agent_register
from agents.services.common import now
from agents.services.operations import operations_apply
from knowledge.models import Edge, Entity, Revision
from knowledge.services.batches import entities_upsert, entity_upserts_together
from knowledge.services.entities import entity_tombstone, entity_upsert
from tenants.models import AuditEvent
from tests.knowledge.conftest import fm, project_of

pytestmark = [pytest.mark.django_db, pytest.mark.parametrize("engine", ["embedded"], indirect=True)]


def notes(count: int, word: str = "Rotate") -> list[tuple[str, str]]:
    return [
        (
            f"notes/n{n}.md",
            fm(id=f"n{n}", type="task", body=f"{word} the key of vault {n}. See [[n{n + 1}]].\n"),
        )
        for n in range(count)
    ]


def block(people: Any, project: Any, batch: list[tuple[str, str]], **extra: Any) -> list[Any]:
    requests = [
        {"project_key": project.key, "path": path, "content": content, **extra}
        for path, content in batch
    ]
    with entity_upserts_together([content for _, content in batch]):
        return entities_upsert(user=people.alice, requests=requests)


def statements(people: Any, project: Any, batch: list[tuple[str, str]], **extra: Any) -> int:
    with CaptureQueriesContext(connection) as captured:
        done = block(people, project, batch, **extra)
    assert all(d is not None for d in done)  # every note decided by the block
    return len(captured.captured_queries)


def test_a_blocks_statements_do_not_grow_with_its_notes(people):
    small, large = project_of(people.alice), project_of(people.alice, remote="git@x:acme/b.git")
    block(people, project_of(people.alice, remote="git@x:acme/warm.git"), notes(1))  # once only
    counts = {}
    for name, project, count in (("small", small, 10), ("large", large, 40)):
        counts[name, "new"] = statements(people, project, notes(count))
        counts[name, "again"] = statements(people, project, notes(count))
        edited = notes(count, "Revoke")
        counts[name, "edited"] = statements(people, project, edited, base_version=1)
        counts[name, "stale"] = statements(people, project, notes(count, "Renew"), base_version=1)

    for kind in ("new", "again", "edited", "stale"):
        assert counts["small", kind] == counts["large", kind], (kind, counts)
    assert counts["large", "new"] <= 12, counts


def test_a_syncs_batch_takes_the_same_statements_for_10_notes_as_for_40(people):
    agent = agent_register(user=people.alice, slug="sync").agent

    def sync(project: Any, batch: list[tuple[str, str]], name: str, **extra: Any) -> int:
        items = [
            {
                "id": f"{name}-{n}",
                "op": "entity.upsert",
                "args": {"project_key": project.key, "path": path, "content": content, **extra},
            }
            for n, (path, content) in enumerate(batch)
        ]
        operations = [parse_operation(agent, item) for item in items]
        with CaptureQueriesContext(connection) as captured:
            outcomes = operations_apply(user=people.alice, agent=agent, operations=operations)
        assert {o.status for o in outcomes} == {"applied"}
        return len(captured.captured_queries)

    sync(project_of(people.alice, remote="git@x:acme/warm.git"), notes(1), "warm")  # once only
    counts = {}
    for size in (10, 40):
        project = project_of(people.alice, remote=f"git@x:acme/{size}.git")
        counts[size] = (
            sync(project, notes(size), f"new{size}"),
            sync(project, notes(size), f"again{size}"),
            sync(project, notes(size, "Revoke"), f"edited{size}", base_version=1),
        )

    assert counts[10] == counts[40], counts


def upsert_ops(people: Any, project: Any, batch: list[dict[str, Any]], sync: str) -> list[Any]:
    agent = agent_register(user=people.alice, slug="sync").agent
    items = [
        {"id": f"{sync}-{n}", "op": "entity.upsert", "args": {"project_key": project.key, **a}}
        for n, a in enumerate(batch)
    ]
    outcomes = operations_apply(
        user=people.alice, agent=agent, operations=[parse_operation(agent, i) for i in items]
    )
    return [o.result["outcome"] if o.result else o.status for o in outcomes]


def one_by_one(people: Any, project: Any, batch: list[dict[str, Any]]) -> list[str]:
    return [entity_upsert(user=people.alice, project_key=project.key, **a).outcome for a in batch]


def note(n: int, word: str = "Rotate", **extra: Any) -> dict[str, Any]:
    path = extra.pop("path", f"notes/n{n}.md")
    links = extra.pop("links", f"[[n{n + 1}]]")
    content = fm(id=f"n{n}", type="task", body=f"{word} vault {n}. See {links}.\n")
    return {"path": path, "content": content, **extra}


SYNCS = [
    [note(n, machine_key="laptop") for n in range(6)],
    [
        note(0, machine_key="desk"),  # unchanged, seen by another machine
        note(1, "Revoke", base_version=1),  # updated
        note(2, "Revoke", base_version=1, links="[[n9]] and [[n0]]"),  # updated, edges moved
        note(3, "Renew"),  # no base: a conflict
        note(4, path="notes/moved/n4.md"),  # the same id at another path: a move (alone)
        note(7),  # created
        note(7, "Twice"),  # the same key again in the block: alone, a conflict
    ],
    [
        note(3, base_version=1),  # the current content, seen: the conflict resolved
        note(5, "Revive", base_version=2),  # the tombstone written again: restored (alone)
        note(2, "Revoke", base_version=2, links="[[n9]] and [[n0]]"),  # unchanged
        note(8, machine_key="laptop"),  # created, seen
    ],
]


REVISION = ["number", "kind", "version", "base_version", "machine", "changed", "content_hash"]
REVISION += ["edges_added", "edges_removed"]


def state(project: Any) -> dict[str, Any]:
    """What the project's entities hold, by key: comparable across projects."""
    out: dict[str, Any] = {}
    for entity in Entity.objects.filter(project=project):
        revisions = Revision.objects.filter(entity=entity).order_by("number")
        edges = Edge.objects.filter(source=entity, removed_at=None)
        events = AuditEvent.objects.filter(
            target_type="knowledge.entity", target_id=str(entity.pk)
        ).order_by("pk")
        out[entity.key] = {
            "fields": (entity.path, entity.version, entity.conflicted, entity.content_hash),
            "seen": entity.seen_by,
            "deleted": entity.deleted_at is not None,
            "aliases": entity.aliases,
            "indexed": entity.indexed_version == entity.version or entity.deleted_at is not None,
            "revisions": list(revisions.values_list(*REVISION)),
            "embedded": [r.embedding is not None for r in revisions],
            "edges": sorted((e.label, e.target) for e in edges),
            "audit": [
                (
                    e.action,
                    {k: v for k, v in e.metadata.items() if k not in ("entity_id", "project")},
                )
                for e in events
            ],
        }
    return out


def tombstone(project: Any, key: str) -> None:
    with transaction.atomic():
        entity = Entity.objects.select_related("project", "user__tenant").get(
            project=project, key=key
        )
        entity_tombstone(entity=entity, moment=now(), reason="test")


def test_a_block_ends_as_the_same_upserts_one_by_one(people):
    batched, single = project_of(people.alice), project_of(people.alice, remote="git@x:acme/c.git")
    answers: dict[str, list[Any]] = {"batched": [], "single": []}
    for n, sync in enumerate(SYNCS):
        if n == 2:
            tombstone(batched, "n5")
            tombstone(single, "n5")
        answers["batched"].append(upsert_ops(people, batched, sync, sync=f"s{n}"))
        answers["single"].append(one_by_one(people, single, sync))

    assert answers["batched"] == answers["single"]
    assert answers["batched"][1] == [
        "unchanged",
        "updated",
        "updated",
        "conflict",
        "moved",
        "created",
        "conflict",
    ]
    assert answers["batched"][2] == ["unchanged", "restored", "unchanged", "created"]
    assert state(batched) == state(single)
