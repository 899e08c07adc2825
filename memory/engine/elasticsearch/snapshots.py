"""Backups of the memory indices as cluster snapshots (a filesystem repository).

Snapshots and restores are cluster administration: they run with an administrator's
credential given to the backup command only (``admin``), never the platform's own (its role
has no snapshot privileges). The repository is ``<prefix>-backups``, of type ``fs``, at
``location``: a directory the nodes' ``path.repo`` allows. Only this deployment's memory
indices (``<prefix>-t-*``) are taken, without the cluster's global state: users, roles and
API keys stay as the cluster knows them now (a key invalidated since the backup stays dead).
"""

from __future__ import annotations

import functools
from typing import Any

from elasticsearch import Elasticsearch

from atlas_platform.cluster import ClusterConfig, cluster_client
from memory.engine.base import EngineError
from memory.engine.elasticsearch.client import call


def _admin(admin: ClusterConfig | None) -> Elasticsearch:
    if admin is None or not admin.username:
        raise EngineError(
            "A snapshot needs the cluster administrator's credential: set "
            "ATLAS_ES_ADMIN_USERNAME and ATLAS_ES_ADMIN_PASSWORD for this command."
        )
    return cluster_client(admin, basic_auth=(admin.username, admin.password))


def repository(config: ClusterConfig) -> str:
    return f"{config.index_prefix}-backups"


def snapshot_take(
    config: ClusterConfig, *, admin: ClusterConfig | None, location: str, name: str
) -> dict[str, Any]:
    """Register the repository (idempotent) and snapshot the memory indices into it; what the
    restore needs (repository, snapshot, indices and their document counts)."""
    if not location:
        raise EngineError(
            "Set ATLAS_ES_SNAPSHOT_LOCATION to a directory listed in the cluster's path.repo."
        )
    client = _admin(admin).options(request_timeout=600)
    repo = repository(config)
    put = functools.partial(
        client.snapshot.create_repository,
        name=repo,
        repository={"type": "fs", "settings": {"location": location}},
    )
    call("register the snapshot repository", put)
    take = functools.partial(
        client.snapshot.create,
        repository=repo,
        snapshot=name,
        indices=config.memory_index_pattern,
        include_global_state=False,
        ignore_unavailable=True,
        wait_for_completion=True,
    )
    result = call("take the snapshot", take).body["snapshot"]
    if result.get("state") != "SUCCESS":
        raise EngineError(f"the snapshot ended {result.get('state')}: {result.get('failures')}")
    return {
        "repository": repo,
        "snapshot": name,
        "location": location,
        "indices": result["indices"],
    }


def memory_indices(config: ClusterConfig, client: Elasticsearch) -> list[str]:
    found = call(
        "list the memory indices",
        lambda: client.indices.get(
            index=config.memory_index_pattern, allow_no_indices=True, expand_wildcards="all"
        ),
    )
    return sorted(found.body)


def snapshot_restore(
    config: ClusterConfig, *, admin: ClusterConfig | None, detail: dict[str, Any]
) -> list[str]:
    """Restore the snapshot's memory indices into a cluster that has none of this prefix's
    (refused otherwise: a restore never overwrites live indices); the indices restored."""
    client = _admin(admin).options(request_timeout=600)
    present = memory_indices(config, client)
    if present:
        raise EngineError(
            f"The cluster already holds memory indices of prefix {config.index_prefix!r} "
            f"({', '.join(present[:3])}); restore into an empty deployment."
        )
    put = functools.partial(
        client.snapshot.create_repository,
        name=detail["repository"],
        repository={"type": "fs", "settings": {"location": detail["location"]}},
    )
    call("register the snapshot repository", put)
    restore = functools.partial(
        client.snapshot.restore,
        repository=detail["repository"],
        snapshot=detail["snapshot"],
        indices=config.memory_index_pattern,
        include_global_state=False,
        wait_for_completion=True,
    )
    result = call("restore the snapshot", restore).body["snapshot"]
    shards = result.get("shards", {})
    if shards.get("failed"):
        raise EngineError(f"the restore failed on {shards['failed']} shard(s)")
    indices: list[str] = sorted(result.get("indices", []))
    if indices:
        call(
            "wait for the restored indices",
            lambda: client.cluster.health(
                index=",".join(indices), wait_for_status="yellow", timeout="60s"
            ),
        )
    return indices


def holds_documents(config: ClusterConfig, client: Elasticsearch) -> bool:
    """Whether any memory index of the prefix exists (an empty deployment has none)."""
    return bool(memory_indices(config, client))
