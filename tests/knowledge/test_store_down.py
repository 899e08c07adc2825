"""A memory store that cannot be reached while a note is written: the entity, its revision
and edges are kept (indexed: false), and the reindex catches the search up afterwards."""

from __future__ import annotations

import pytest

from knowledge.models import Entity
from knowledge.selectors import graph_search
from knowledge.services.entities import entities_reindex, tombstones_purge
from memory.services import bookkeeping
from tests.knowledge.conftest import fm, project_of, writer

pytestmark = pytest.mark.services


@pytest.fixture
def cluster(es, settings, db):
    settings.ATLAS_MEMORY_BACKEND = "elasticsearch"
    yield es
    bookkeeping.drain()


def test_a_note_written_while_the_cluster_is_unreachable_is_indexed_later(alice, cluster, settings):
    project = project_of(alice)
    reachable = settings.ATLAS_ES_URL
    settings.ATLAS_ES_URL = "http://127.0.0.1:9"  # nothing listens there: connection refused
    done = writer(alice, project)("docs/x.md", fm(id="x", body="Octopus husbandry notes.\n"))
    assert done.outcome == "created"
    entity = Entity.objects.get(pk=done.entity.pk)
    assert entity.indexed_version == 0 and entity.version == 1
    assert entities_reindex() == 0  # still unreachable: nothing is marked done
    settings.ATLAS_ES_URL = reachable
    assert graph_search(user=alice, query="octopus husbandry") == []
    assert entities_reindex() == 1
    assert graph_search(user=alice, query="octopus husbandry")[0].entity.key == "x"
    assert Entity.objects.get(pk=entity.pk).indexed_version == 1


def test_tombstones_past_the_window_are_purged(alice, clock, store):
    project = project_of(alice, path="/src/p")
    note = writer(alice, project)
    note("a.md", "# A\n")
    entity = Entity.objects.get(project=project)
    Entity.objects.filter(pk=entity.pk).update(deleted_at=clock.at)
    clock.advance(days=29)
    assert tombstones_purge() == 0
    clock.advance(days=2)
    assert tombstones_purge() == 1 and not Entity.objects.exists()
