"""Tenants' catalog keys on the real cluster: a tenant token's catalog reads under ``dls`` run
with a key that reads its tenant's catalog documents and nothing else, and that follows the
tenant's lifecycle (onboarding, isolation switch, suspend / reactivate, renewal)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone
from elasticsearch import AuthenticationException, AuthorizationException, Elasticsearch

from atlas_platform.cluster import Cluster, ClusterConfig
from memory.services.catalog import catalog_import
from memory.services.scoping import scoped_keys
from memory.services.writes import memory_turn_record, memory_write
from tenants.models import AuditEvent, CatalogKey, Tenant
from tenants.services.catalog_keys import (
    catalog_key_credentials,
    catalog_key_current,
    catalog_key_provision,
    catalog_key_rotate,
)
from tenants.services.tenants import (
    tenant_isolation_set,
    tenant_onboard,
    tenant_reactivate,
    tenant_suspend,
)
from tenants.services.tokens import token_issue
from tests.conftest import PASSWORD
from tests.memory.conftest import engine, people  # noqa: F401 - shared fixtures

pytestmark = pytest.mark.django_db
es_dls = pytest.mark.parametrize("engine", ["es-dls"], indirect=True)


def as_key(config: ClusterConfig, key: CatalogKey) -> Elasticsearch:
    return Cluster(config).as_api_key(catalog_key_credentials(key=key))


def visible(config: ClusterConfig, key: CatalogKey) -> set[str]:
    # Every index on the cluster: the key resolves the wildcard to what it may read.
    found = as_key(config, key).search(index="*", query={"match_all": {}}, size=1000)
    return {hit["_id"] for hit in found["hits"]["hits"]}


def seed(people) -> dict[str, set[str]]:  # noqa: F811 - the fixture's value
    """Both tenants' catalogs and each user's memories of every personal type, written by the
    platform's own services."""
    ids: dict[str, set[str]] = {}
    for tenant, word in ((people.acme, "acme"), (people.globex, "globex")):
        written = catalog_import(
            tenant=tenant,
            documents=[
                {"id": f"{word}-hours", "text": f"{word} opens at nine"},
                {"id": f"{word}-refunds", "text": f"{word} refunds within 30 days"},
            ],
        ).written
        ids[f"catalog:{word}"] = set(written)
    for user in (people.alice, people.bob, people.charlie):
        who = user.external_id
        mine = {
            memory_write(user=user, text=f"{who} likes tea", memory_type="semantic").id,
            memory_write(
                user=user,
                text="make tea",
                memory_type="procedural",
                name="tea",
                description="how",
            ).id,
        }
        mine.add(memory_turn_record(user=user, text=f"{who} says hi").episode.id)
        ids[user.external_id] = mine
    return ids


def cluster_config(people) -> ClusterConfig:  # noqa: F811
    config = ClusterConfig.from_settings()
    assert config is not None
    return config


@es_dls
def test_the_catalog_key_reads_its_tenants_catalog_and_nothing_else(people):  # noqa: F811
    ids = seed(people)
    config = cluster_config(people)
    acme_key, globex_key = (catalog_key_current(tenant=t) for t in (people.acme, people.globex))
    assert acme_key is not None and globex_key is not None

    assert visible(config, acme_key) == ids["catalog:acme"]
    assert visible(config, globex_key) == ids["catalog:globex"]
    # Not even a query naming a user's memory by id gets it.
    alices = sorted(ids["alice"])[0]
    found = as_key(config, acme_key).search(index="*", query={"ids": {"values": [alices]}}, size=10)
    assert found["hits"]["hits"] == []


@es_dls
def test_the_catalog_key_has_search_only(people):  # noqa: F811
    ids = seed(people)
    config = cluster_config(people)
    key = catalog_key_current(tenant=people.acme)
    assert key is not None
    client, index = as_key(config, key), config.tenant_index(people.acme.memory_id)
    doc = sorted(ids["catalog:acme"])[0]
    refused = {
        "termvectors": lambda: client.termvectors(index=index, id=doc, term_statistics=True),
        "mtermvectors": lambda: client.mtermvectors(index=index, ids=[doc]),
        "explain": lambda: client.explain(index=index, id=doc, query={"match_all": {}}),
        "get": lambda: client.get(index=index, id=doc),
        "field_caps": lambda: client.field_caps(index=index, fields="*"),
        "write": lambda: client.index(index=index, document={"text": "x"}),
    }
    for name, call in refused.items():
        with pytest.raises(AuthorizationException):
            call()
            pytest.fail(f"{name} answered")
    role = Cluster(config).client.security.get_api_key(id=key.key_id, owner=True)["api_keys"][0]
    grant = role["role_descriptors"]["atlas_catalog_reader"]["indices"]
    assert [g["names"] for g in grant] == [[index]]
    assert role["expiration"] is not None and key.expires_at is not None


def catalog_get(token: str) -> tuple[int, dict[str, Any]]:
    response = Client().get("/api/v1/catalog", HTTP_AUTHORIZATION=f"Bearer {token}")
    return response.status_code, response.json()


@es_dls
def test_a_tenant_tokens_catalog_listing_runs_with_the_catalog_key(people):  # noqa: F811
    ids = seed(people)
    token = token_issue(tenant=people.acme, name="fleet", allow_catalog=True).secret

    status, body = catalog_get(token)
    assert status == 200
    assert {d["id"] for d in body["results"]} == {"catalog:acme-hours", "catalog:acme-refunds"}
    assert len(ids["catalog:acme"]) == 2

    # The key dies on the cluster behind the database's back: the listing is refused (the
    # writer, which could still read it, is never used instead).
    key = catalog_key_current(tenant=people.acme)
    assert key is not None
    Cluster(cluster_config(people)).invalidate_api_key(key.key_id)
    scoped_keys.clear()
    status, body = catalog_get(token)
    assert status == 503, body

    # No key at all: refused with a message that says why.
    CatalogKey.objects.filter(pk=key.pk).update(status=CatalogKey.Status.INVALIDATED)
    scoped_keys.clear()
    status, body = catalog_get(token)
    assert status == 503 and body["error"]["code"] == "no_catalog_key"
    assert "catalog key" in body["error"]["message"]

    # Another tenant's listing is untouched.
    other = token_issue(tenant=people.globex, name="fleet", allow_catalog=True).secret
    status, body = catalog_get(other)
    assert status == 200 and len(body["results"]) == 2


@es_dls
def test_suspending_the_tenant_kills_its_catalog_key_and_reactivating_makes_one(people):  # noqa: F811
    ids = seed(people)
    config = cluster_config(people)
    old = catalog_key_current(tenant=people.acme)
    assert old is not None and visible(config, old) == ids["catalog:acme"]

    tenant_suspend(tenant=people.acme)

    with pytest.raises(AuthenticationException):
        visible(config, old)
    old.refresh_from_db()
    assert old.status == CatalogKey.Status.INVALIDATED
    assert catalog_key_current(tenant=people.acme) is None
    globex = catalog_key_current(tenant=people.globex)
    assert globex is not None and visible(config, globex) == ids["catalog:globex"]

    tenant_reactivate(tenant=Tenant.objects.get(pk=people.acme.pk))

    fresh = catalog_key_current(tenant=people.acme)
    assert fresh is not None and fresh.key_id != old.key_id
    assert visible(config, fresh) == ids["catalog:acme"]
    actions = list(
        AuditEvent.objects.filter(tenant=people.acme, action__startswith="catalog_key.")
        .order_by("created_at", "id")
        .values_list("action", flat=True)
    )
    assert actions[-2:] == ["catalog_key.invalidate", "catalog_key.provision"]


@es_dls
def test_rotation_switches_keys_and_the_old_one_is_refused(people):  # noqa: F811
    ids = seed(people)
    config = cluster_config(people)
    old = catalog_key_current(tenant=people.acme)
    assert old is not None

    new = catalog_key_rotate(tenant=people.acme)

    assert new.rotated_from == old and catalog_key_current(tenant=people.acme) == new
    assert visible(config, new) == ids["catalog:acme"]
    with pytest.raises(AuthenticationException):
        visible(config, old)
    assert new.key_id not in new.encrypted_secret
    assert catalog_key_credentials(key=new).secret not in new.encrypted_secret


@es_dls
def test_the_renew_task_rotates_a_catalog_key_near_expiry_and_makes_a_missing_one(people):  # noqa: F811
    from tenants.tasks import scoped_keys_renew_task

    seed(people)
    config = cluster_config(people)
    near = catalog_key_current(tenant=people.acme)
    lost = catalog_key_current(tenant=people.globex)
    assert near is not None and lost is not None
    CatalogKey.objects.filter(pk=near.pk).update(expires_at=timezone.now() + timedelta(hours=1))
    Cluster(config).invalidate_api_key(lost.key_id)
    CatalogKey.objects.filter(pk=lost.pk).update(status=CatalogKey.Status.INVALIDATED)

    result = scoped_keys_renew_task.apply().get()

    assert result["catalog_rotated"] == 1 and result["catalog_made"] == 1, result
    assert result["catalog_failed"] == 0
    renewed = catalog_key_current(tenant=people.acme)
    assert renewed is not None and renewed.rotated_from_id == near.pk
    assert renewed.expires_at is not None
    assert renewed.expires_at > timezone.now() + timedelta(days=6)
    made = catalog_key_current(tenant=people.globex)
    assert made is not None and visible(config, made)
    with pytest.raises(AuthenticationException):
        visible(config, near)


def test_onboarding_a_dls_tenant_gives_it_a_catalog_key_and_the_switch_follows(es, db, settings):
    result = tenant_onboard(
        slug="initech",
        name="Initech",
        admin_username="initech-admin",
        admin_password=PASSWORD,
        user_external_ids=["peter"],
    )
    tenant = result.tenant
    assert tenant.isolation_mode == Tenant.IsolationMode.DLS
    assert result.catalog_key is not None
    assert catalog_key_current(tenant=tenant) == result.catalog_key
    event = AuditEvent.objects.get(action="tenant.onboard", tenant=tenant)
    assert event.metadata["catalog_key"] == result.catalog_key.key_id
    # Nothing written yet (no index): the listing, with the key, is empty, not an error.
    settings.ATLAS_MEMORY_BACKEND = "elasticsearch"
    token = token_issue(tenant=tenant, name="fleet", allow_catalog=True).secret
    assert catalog_get(token) == (200, {"results": [], "next": None})

    tenant_isolation_set(tenant=tenant, mode=Tenant.IsolationMode.FILTER)
    assert catalog_key_current(tenant=tenant) is None
    with pytest.raises(AuthenticationException):
        visible(es, result.catalog_key)

    tenant_isolation_set(tenant=Tenant.objects.get(pk=tenant.pk), mode=Tenant.IsolationMode.DLS)
    again = catalog_key_current(tenant=tenant)
    assert again is not None and again.key_id != result.catalog_key.key_id


def test_a_second_active_catalog_key_is_refused(es, acme):
    Tenant.objects.filter(pk=acme.pk).update(isolation_mode=Tenant.IsolationMode.DLS)
    first = catalog_key_provision(tenant=acme)
    from atlas_platform.exceptions import Conflict

    with pytest.raises(Conflict):
        catalog_key_provision(tenant=acme)
    assert list(CatalogKey.objects.filter(tenant=acme)) == [first]
