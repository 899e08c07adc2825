"""Backends under test: embedded (SQLite) and Elasticsearch in both isolation modes."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from atlas_platform.cluster import ApiKey
from memory.engine.base import MemoryBackend
from memory.engine.types import Isolation, MemoryDoc, MemoryType, ReadScope

DIMS = 8


def vec(*hot: int, weight: float = 1.0) -> list[float]:
    """A unit-ish vector with ``weight`` at the given positions (cosine-friendly)."""
    values = [0.01] * DIMS
    for i in hot:
        values[i] = weight
    norm = sum(v * v for v in values) ** 0.5
    return [v / norm for v in values]


class ContractKeys:
    """The contract's scoped keys: one per (tenant, user), created on first use with the role
    descriptor the product gives a user (``tenants.services.scoped_keys.role_descriptors``),
    and for no user the tenant's catalog key (``catalog_keys.catalog_role_descriptors``)."""

    def __init__(self, config: Any) -> None:
        self.config = config
        self.keys: dict[tuple[str, str | None], ApiKey] = {}
        self.reloads = 0

    def current(self, tenant_id: str, user_id: str | None) -> ApiKey:
        if (tenant_id, user_id) not in self.keys:
            from atlas_platform.cluster import Cluster
            from tenants.services.catalog_keys import catalog_role_descriptors
            from tenants.services.scoped_keys import role_descriptors

            index = self.config.tenant_index(tenant_id)
            roles = (
                catalog_role_descriptors(index=index, tenant_id=tenant_id)
                if user_id is None
                else role_descriptors(
                    indices=[index, self.config.archive_index(index)],
                    tenant_id=tenant_id,
                    user_id=user_id,
                )
            )
            self.keys[(tenant_id, user_id)] = Cluster(self.config).create_api_key(
                name=f"contract-{tenant_id[:8]}-{user_id or 'catalog'}",
                role_descriptors=roles,
                metadata={"test": True},
            )
        return self.keys[(tenant_id, user_id)]

    def reload(self, tenant_id: str, user_id: str | None) -> ApiKey:
        self.reloads += 1
        return self.current(tenant_id, user_id)


@dataclass
class BackendEnv:
    backend: MemoryBackend
    isolation: Isolation
    keys: ContractKeys | None = None

    def scope(self, tenant_id: str, user_id: str | None) -> ReadScope:
        # Under dls a catalog-only scope reads with the tenant's catalog key.
        isolation: Isolation = "dls" if self.isolation == "dls" else "filter"
        return ReadScope(tenant_id=tenant_id, user_id=user_id, isolation=isolation)


@pytest.fixture(params=["embedded", "embedded-ann", "es-filter", "es-dls"])
def env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BackendEnv]:
    if request.param.startswith("embedded"):
        from memory.engine.embedded import EmbeddedBackend

        # embedded-ann: every owner's dense leg through its index (memory/engine/embedded/ann.py)
        backend: MemoryBackend = EmbeddedBackend(
            path=tmp_path / "memory.sqlite3",
            dims=DIMS,
            ann_min_rows=1 if request.param == "embedded-ann" else 20_000,
        )
        backend.ensure_ready()
        yield BackendEnv(backend=backend, isolation="filter")
        return
    # Own indices: the contract runs with tiny vectors, the services with the real model's.
    config = dataclasses.replace(
        request.getfixturevalue("es_session_config"),
        index_prefix=request.getfixturevalue("es_index_prefix") + "-contract",
    )
    from memory.engine.elasticsearch import ElasticsearchBackend

    keys = ContractKeys(config)
    backend = ElasticsearchBackend(config=config, dims=DIMS, keys=keys)
    backend.ensure_ready()
    isolation: Isolation = "dls" if request.param == "es-dls" else "filter"
    yield BackendEnv(backend=backend, isolation=isolation, keys=keys)


@pytest.fixture
def tenant() -> str:
    """A fresh tenant id per test, so tests sharing an index never see each other."""
    return uuid.uuid4().hex


def make_doc(
    tenant_id: str,
    user_id: str | None,
    memory_type: MemoryType,
    text: str,
    *,
    embedding: list[float] | None = None,
    when: datetime | None = None,
    **extra: Any,
) -> MemoryDoc:
    moment = when or datetime.now(UTC)
    return MemoryDoc(
        id=uuid.uuid4().hex,
        tenant_id=tenant_id,
        user_id=user_id,
        memory_type=memory_type,
        text=text,
        created_at=extra.pop("created_at", moment),
        timestamp=moment,
        embedding=embedding if embedding is not None else vec(0),
        last_used_at=extra.pop("last_used_at", moment if memory_type == "semantic" else None),
        **extra,
    )
