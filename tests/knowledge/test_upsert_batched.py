"""A batch's consecutive ``entity.upsert`` operations written as one batch
(``searchable_writes_together``): one embedding call for their notes, one store write for their
searchable documents, each entity indexed (``indexed_version``) once its document is stored;
a store down at the batch's write leaves them for the reindex, as a single upsert does. Per
backend (the ``engine`` fixture)."""

from __future__ import annotations

from typing import Any

import pytest

from agents.api.operations import parse_operation
from agents.services.agents import agent_register
from agents.services.operations import operations_apply
from knowledge.models import Entity
from knowledge.selectors import graph_search
from knowledge.services.entities import entities_reindex
from memory.engine.base import EngineError
from memory.services.common import backend
from tests.knowledge.conftest import fm, project_of

pytestmark = pytest.mark.django_db


def upserts(
    people: Any,
    project: Any,
    notes: list[tuple[str, str]],
    *,
    sync: str = "n",
    base: dict[str, int] | None = None,
) -> list[Any]:
    agent = agent_register(user=people.alice, slug="sync").agent
    items = [
        {
            "id": f"{sync}-{n}",
            "op": "entity.upsert",
            "args": {"project_key": project.key, "path": path, "content": content} | (base or {}),
        }
        for n, (path, content) in enumerate(notes)
    ]
    return operations_apply(
        user=people.alice, agent=agent, operations=[parse_operation(agent, i) for i in items]
    )


NOTES = [
    (f"notes/n{n}.md", fm(id=f"n{n}", type="task", body=f"Rotate the key of vault {n}.\n"))
    for n in range(8)
]


def counted_embeds(monkeypatch: Any) -> list[int]:
    """The number of texts of each model call ``searchable_*`` makes, from now on."""
    from memory.services import common, documents

    embeds: list[int] = []
    real_embedder = common.embedder

    class Counted:
        def __init__(self) -> None:
            self.model = real_embedder()

        def embed(self, texts: list[str]) -> Any:
            embeds.append(len(texts))
            return self.model.embed(texts)

    monkeypatch.setattr(documents, "embedder", Counted)
    return embeds


def test_a_sync_resending_its_notes_embeds_only_the_changed_ones(people, monkeypatch):
    project = project_of(people.alice)
    upserts(people, project, NOTES)
    changed = [
        (path, content.replace("Rotate", "Revoke")) if n >= 6 else (path, content)
        for n, (path, content) in enumerate(NOTES)
    ]
    embeds = counted_embeds(monkeypatch)

    again = upserts(people, project, NOTES, sync="again")
    edited = upserts(people, project, changed, sync="edited", base={"base_version": 1})
    monkeypatch.undo()

    assert [o.result["outcome"] for o in again] == ["unchanged"] * 8
    assert [o.result["outcome"] for o in edited] == ["unchanged"] * 6 + ["updated"] * 2
    assert embeds == [2]  # the unchanged notes before them were never embedded
    found = graph_search(user=people.alice, query="revoke vault 7", project_key=project.key)
    assert "n7" in [hit.entity.key for hit in found][:3]


def test_a_run_of_upserts_is_one_embedding_call_and_one_store_write(people, monkeypatch):
    project = project_of(people.alice)
    writes: list[int] = []
    real_write = type(backend()).write

    def write(self: Any, docs: list[Any]) -> None:
        writes.append(len(docs))
        real_write(self, docs)

    embeds = counted_embeds(monkeypatch)
    monkeypatch.setattr(type(backend()), "write", write)

    outcomes = upserts(people, project, NOTES)
    monkeypatch.undo()

    assert [o.status for o in outcomes] == ["applied"] * 8
    assert embeds == [8] and writes == [8]
    entities = Entity.objects.filter(project=project)
    assert entities.count() == 8
    assert all(e.indexed_version == e.version for e in entities)
    found = graph_search(user=people.alice, query="vault 3 key", project_key=project.key)
    assert "n3" in [hit.entity.key for hit in found][:3]


def test_a_bad_note_in_a_run_is_rejected_alone(people, monkeypatch):
    project = project_of(people.alice)
    notes = [NOTES[0], ("notes/bad.md", "---\nid: [unclosed\n---\nbody\n"), NOTES[1]]
    embeds = counted_embeds(monkeypatch)

    outcomes = upserts(people, project, notes)

    assert [o.status for o in outcomes] == ["applied", "rejected", "applied"]
    assert outcomes[1].status_code == 400
    assert outcomes[1].error["code"] == "bad_front_matter"
    assert embeds == [2]  # the run stays one block around it
    assert sorted(Entity.objects.filter(project=project).values_list("key", flat=True)) == [
        "n0",
        "n1",
    ]


def test_the_store_down_at_the_runs_write_leaves_the_entities_to_the_reindex(people, monkeypatch):
    project = project_of(people.alice)

    def down(self: Any, docs: list[Any]) -> None:
        raise EngineError("the store went away")

    monkeypatch.setattr(type(backend()), "write", down)
    outcomes = upserts(people, project, NOTES[:3])
    monkeypatch.undo()

    assert [o.status for o in outcomes] == ["applied"] * 3  # kept in the graph, index behind
    assert all(e.indexed_version < e.version for e in Entity.objects.filter(project=project))
    assert entities_reindex(user=people.alice) == 3
    found = graph_search(user=people.alice, query="vault 2 key", project_key=project.key)
    assert "n2" in [hit.entity.key for hit in found]
