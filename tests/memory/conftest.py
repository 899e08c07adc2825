"""Memory services against each backend: embedded, and Elasticsearch in both isolation modes.

Tenants Acme (Alice, Bob) and Globex (Charlie, Dave), with scoped keys (and the tenants'
catalog keys) on the cluster in mode ``dls``. Every test runs once per backend: a behaviour
that differs between them is a bug.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from memory.services import bookkeeping
from tenants.models import Tenant, User
from tenants.services.catalog_keys import catalog_key_provision
from tenants.services.scoped_keys import scoped_key_provision


@dataclass
class People:
    acme: Tenant
    globex: Tenant
    alice: User
    bob: User
    charlie: User
    dave: User
    kind: str


@pytest.fixture(params=["embedded", "es-dls", "es-filter"])
def engine(request: pytest.FixtureRequest, settings: Any, tmp_path: Any, db: None) -> Iterator[str]:
    if request.param == "embedded":
        settings.ATLAS_MEMORY_BACKEND = "embedded"
        settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")
    else:
        request.getfixturevalue("es")
        settings.ATLAS_MEMORY_BACKEND = "elasticsearch"
    yield request.param
    bookkeeping.drain()


@pytest.fixture
def people(engine: str) -> People:
    mode = Tenant.IsolationMode.DLS if engine == "es-dls" else Tenant.IsolationMode.FILTER
    # One operator each, like tests/conftest.py's named tenants: four eyes off.
    single = {"isolation_mode": mode, "erasure_requires_second_operator": False}
    acme = Tenant.objects.create(slug="acme", name="Acme", **single)
    globex = Tenant.objects.create(slug="globex", name="Globex", **single)
    users = {
        name: User.objects.create(tenant=tenant, external_id=name)
        for name, tenant in (("alice", acme), ("bob", acme), ("charlie", globex), ("dave", globex))
    }
    if engine == "es-dls":  # the keys onboarding gives a cluster-enforced tenant
        for user in users.values():
            scoped_key_provision(user=user)
        for tenant in (acme, globex):
            catalog_key_provision(tenant=tenant)
    return People(acme=acme, globex=globex, kind=engine, **users)
