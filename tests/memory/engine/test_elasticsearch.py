"""The Elasticsearch backend's own side of ``dls`` reads: the user's scoped key comes from the
backend's key provider, the cluster (not only the backend's filters) refuses what the key may
not read, and a key the cluster refuses is re-read once, never replaced by the writer."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from atlas_platform.cluster import Cluster
from memory.engine.base import EngineError
from memory.engine.elasticsearch import ElasticsearchBackend
from memory.engine.elasticsearch.setup import DeploymentMismatch
from memory.engine.types import LegQuery, Ranking, ReadScope, RecallFilter
from tests.memory.engine.conftest import DIMS, ContractKeys, make_doc, vec


@pytest.fixture
def keys(es_session_config: Any, es_index_prefix: str) -> ContractKeys:
    config = dataclasses.replace(es_session_config, index_prefix=es_index_prefix + "-contract")
    return ContractKeys(config)


@pytest.fixture
def store(keys: ContractKeys) -> Iterator[ElasticsearchBackend]:
    backend = ElasticsearchBackend(config=keys.config, dims=DIMS, keys=keys)
    backend.ensure_ready()
    yield backend


def dls(tenant: str, user: str) -> ReadScope:
    return ReadScope(tenant_id=tenant, user_id=user, isolation="dls")


def test_with_another_users_key_the_cluster_refuses_what_the_filters_allow(store, keys, tenant):
    mine = make_doc(tenant, "u1", "semantic", "the locker code is 4711", embedding=vec(2))
    store.write([mine])
    keys.keys[(tenant, "u1")] = keys.current(tenant, "u2")  # u1's reads now run with u2's key

    query = LegQuery(
        text="locker code",
        vector=vec(2),
        filter=RecallFilter(),
        ranking=Ranking(),
        now=mine.created_at,
    )
    found = store.recall_legs(dls(tenant, "u1"), query)

    assert store.get(dls(tenant, "u1"), mine.id) is None
    assert found.lexical == [] and found.dense == []
    filtered = ReadScope(tenant_id=tenant, user_id="u1", isolation="filter")
    assert store.get(filtered, mine.id) is not None  # the document is there: the key is refused


def test_a_key_the_cluster_refuses_is_read_again_once(store, keys, tenant):
    mine = make_doc(tenant, "u1", "semantic", "plays the cello")
    store.write([mine])
    live = keys.current(tenant, "u1")
    stale = Cluster(keys.config).create_api_key(name="stale", role_descriptors={}, metadata={})
    Cluster(keys.config).invalidate_api_key(stale.id)
    keys.keys[(tenant, "u1")] = stale  # a kept copy of a key rotated since

    def reread(tenant_id: str, user_id: str) -> Any:
        keys.reloads += 1
        keys.keys[(tenant_id, user_id)] = live
        return live

    keys.reload = reread

    assert [d.id for d in store.get_many(dls(tenant, "u1"), [mine.id])] == [mine.id]
    assert keys.reloads == 1


def test_a_key_refused_again_after_the_reread_fails_closed(store, keys, tenant):
    mine = make_doc(tenant, "u1", "semantic", "plays the cello")
    store.write([mine])
    stale = Cluster(keys.config).create_api_key(name="stale", role_descriptors={}, metadata={})
    Cluster(keys.config).invalidate_api_key(stale.id)
    keys.keys[(tenant, "u1")] = stale  # and the provider has nothing newer

    with pytest.raises(EngineError):
        store.get_many(dls(tenant, "u1"), [mine.id])
    assert keys.reloads == 1


def test_a_dls_read_without_a_key_provider_is_refused(keys, tenant):
    backend = ElasticsearchBackend(config=keys.config, dims=DIMS)

    with pytest.raises(EngineError):
        backend.get_many(dls(tenant, "u1"), ["x"])


def test_the_backend_refuses_a_prefix_that_holds_another_deployments_indices(keys, tenant):
    """Two deployments (or one whose database was reset) on one prefix would write into and
    grant keys over each other's indices: the second refuses to start."""
    config = dataclasses.replace(keys.config, index_prefix=keys.config.index_prefix + "-dep")
    first = ElasticsearchBackend(config=config, dims=DIMS, deployment="deployment-a")
    first.ensure_ready()
    first.write([make_doc(tenant, "u1", "semantic", "written by deployment a")])
    mapping = Cluster(config).client.indices.get_mapping(index=first.index_for(tenant, None))
    assert next(iter(mapping.body.values()))["mappings"]["_meta"] == {
        "atlas_deployment": "deployment-a"
    }

    second = ElasticsearchBackend(config=config, dims=DIMS, deployment="deployment-b")
    with pytest.raises(DeploymentMismatch, match="another deployment"):
        second.ensure_ready()
    first.ensure_ready()  # its own indices: fine


def test_each_tenant_has_an_index_of_its_own(store, keys, tenant):
    other = tenant[::-1]
    store.write([make_doc(tenant, "u1", "semantic", "a"), make_doc(other, "u1", "semantic", "b")])
    client = Cluster(keys.config).client
    assert client.count(index=store.index_for(tenant, "u1"))["count"] == 1
    assert client.count(index=store.index_for(other, "u1"))["count"] == 1
    assert store.index_for(tenant, "u1") != store.index_for(other, "u1")


def test_ensure_ready_adds_the_turn_context_fields_to_an_existing_index(keys, tenant):
    """An index made from the mapping before the lexical turn context (strict: it would refuse
    a document with ``context``) gets the new fields from ``ensure_ready`` (put-mapping)."""
    from memory.engine.elasticsearch.setup import ADDED_FIELDS, load_template

    config = dataclasses.replace(keys.config, index_prefix=keys.config.index_prefix + "-mig")
    backend = ElasticsearchBackend(config=config, dims=DIMS)
    index = backend.index_for(tenant, None)
    old = load_template("memory-component.json", config.index_prefix, DIMS)["template"]
    for name in ADDED_FIELDS:
        del old["mappings"]["properties"][name]
    client = Cluster(config).client
    client.indices.create(index=index, settings=old["settings"], mappings=old["mappings"])
    try:
        turn = make_doc(tenant, "u1", "episodic", "sounds good", context="birthday at the pub")
        with pytest.raises(EngineError):  # strict: the old mapping refuses the new field
            backend.write([turn])

        backend.ensure_ready()
        backend.ensure_ready()  # idempotent

        properties = client.indices.get_mapping(index=index).body[index]["mappings"]["properties"]
        assert properties["context"] == {"type": "text", "analyzer": "atlas_english"}
        assert properties["context_ids"] == {"type": "keyword"}
        backend.write([turn])
        query = LegQuery(
            text="birthday",
            vector=vec(0),
            filter=RecallFilter(),
            ranking=Ranking(),
            now=turn.created_at,
            context_boost=0.5,
        )
        scope = ReadScope(tenant_id=tenant, user_id="u1", isolation="filter")
        assert [h.id for h in backend.recall_legs(scope, query).lexical] == [turn.id]
    finally:
        client.indices.delete(index=index, ignore_unavailable=True)


def test_ensure_ready_adds_the_project_field_and_fills_it_from_metadata(keys, tenant):
    """An index from before ``project`` gets the field (put-mapping) and its documents the
    project that agents' writes kept in ``metadata.project``; nothing else changes."""
    from memory.engine.elasticsearch.setup import load_template

    config = dataclasses.replace(keys.config, index_prefix=keys.config.index_prefix + "-proj")
    backend = ElasticsearchBackend(config=config, dims=DIMS)
    index = backend.index_for(tenant, "u1")
    old = load_template("memory-component.json", config.index_prefix, DIMS)["template"]
    del old["mappings"]["properties"]["project"]
    client = Cluster(config).client
    client.indices.create(index=index, settings=old["settings"], mappings=old["mappings"])
    try:
        note = make_doc(tenant, "u1", "semantic", "use uv for envs", metadata={"project": "p1"})
        plain = make_doc(tenant, "u1", "semantic", "use pip for envs", metadata={"n": 1})
        backend.write([note, plain])

        backend.ensure_ready()
        backend.ensure_ready()  # idempotent

        properties = client.indices.get_mapping(index=index).body[index]["mappings"]["properties"]
        assert properties["project"] == {"type": "keyword"}
        scope = ReadScope(tenant_id=tenant, user_id="u1", isolation="filter")
        mine, got = backend.get(scope, note.id), backend.get(scope, plain.id)
        assert mine is not None and mine.project == "p1"
        assert got is not None and got.project is None and got.metadata == {"n": 1}

        def lexical(**flt: Any) -> set[str]:
            query = LegQuery(
                text="envs",
                vector=vec(0),
                filter=RecallFilter(**flt),
                ranking=Ranking(),
                now=note.created_at,
            )
            return {h.id for h in backend.recall_legs(scope, query).lexical}

        assert lexical(project="p1") == {note.id}
        assert lexical(project="p1", include_unscoped=True) == {note.id, plain.id}
    finally:
        client.indices.delete(index=index, ignore_unavailable=True)


def test_ensure_ready_gives_new_indices_the_configured_replicas(keys, tenant):
    """``ATLAS_ES_REPLICAS`` (``ClusterConfig.replicas``) is the template's replica count: an
    index made after ``ensure_ready`` carries it (a cluster of several nodes keeps a copy)."""
    client = Cluster(keys.config).client
    made = []
    for replicas in (0, 2):
        prefix = f"{keys.config.index_prefix}-rep{replicas}"
        config = dataclasses.replace(keys.config, index_prefix=prefix, replicas=replicas)
        backend = ElasticsearchBackend(config=config, dims=DIMS)
        backend.ensure_ready()
        index = backend.index_for(tenant, None)
        made.append(index)
        client.indices.create(index=index)  # from the template, as a first write makes it
        settings = client.indices.get_settings(index=index).body[index]["settings"]["index"]
        assert settings["number_of_replicas"] == str(replicas)
    for index in made:
        client.indices.delete(index=index, ignore_unavailable=True)
