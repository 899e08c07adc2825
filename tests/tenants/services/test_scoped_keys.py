"""Scoped keys on the real cluster: DLS isolation, rotation, outage, invalidation."""

from __future__ import annotations

import pytest
from elasticsearch import AuthenticationException, AuthorizationException, Elasticsearch

from atlas_platform.cluster import Cluster, ClusterConfig
from atlas_platform.exceptions import ClusterUnavailable, Conflict
from tenants.crypto import decrypt
from tenants.models import AuditEvent, ScopedKey, User
from tenants.services.scoped_keys import (
    scoped_key_credentials,
    scoped_key_invalidate,
    scoped_key_provision,
    scoped_key_rotate,
)

pytestmark = pytest.mark.django_db
INDEX_TYPES = ("episodic", "semantic", "procedural", "catalog")


def admin_client(config: ClusterConfig) -> Elasticsearch:
    return Cluster(config).client


def as_key(config: ClusterConfig, key: ScopedKey) -> Elasticsearch:
    return Cluster(config).as_api_key(scoped_key_credentials(key=key))


def visible_ids(config: ClusterConfig, key: ScopedKey) -> set[str]:
    # Every index on the cluster: the key resolves the wildcard to what it may read.
    result = as_key(config, key).search(index="*", query={"match_all": {}}, size=1000)
    return {hit["_id"] for hit in result["hits"]["hits"]}


@pytest.fixture
def dave(globex) -> User:
    return User.objects.create(tenant=globex, external_id="dave")


@pytest.fixture
def seeded(es, alice, bob, charlie, dave, settings) -> dict[str, set[str]]:
    """Two tenants x two users, documents in each tenant's index plus each tenant's catalog;
    and the same ids in an index of another deployment (another prefix) on the same cluster,
    which no key of this deployment may read."""
    client = admin_client(es)
    mapping = {
        "properties": {
            "tenant_id": {"type": "keyword"},
            "user_id": {"type": "keyword"},
            "text": {"type": "text"},
        },
        # This deployment's own indices (the platform refuses a prefix with others').
        "_meta": {"atlas_deployment": settings.ATLAS_DEPLOYMENT_ID},
    }
    other = ClusterConfig(url=es.url, index_prefix=f"{es.index_prefix}-b")
    for tenant in (alice.tenant, charlie.tenant):
        for config in (es, other):
            index = config.tenant_index(tenant.memory_id)
            if not client.indices.exists(index=index):
                client.indices.create(index=index, mappings=mapping)
    owned: dict[str, set[str]] = {}
    operations: list[dict[str, object]] = []
    for user in (alice, bob, charlie, dave):
        ids = set()
        for kind in ("episodic", "semantic", "procedural"):
            for n in range(2):
                doc_id = f"{kind}-{user.external_id}-{n}-{es.index_prefix}"
                source = {
                    "tenant_id": user.memory_tenant_id,
                    "user_id": user.memory_id,
                    "text": f"{kind} note",
                }
                operations += [
                    {"index": {"_index": es.tenant_index(user.memory_tenant_id), "_id": doc_id}},
                    source,
                    {
                        "index": {
                            "_index": other.tenant_index(user.memory_tenant_id),
                            "_id": "b-" + doc_id,
                        }
                    },
                    source,
                ]
                ids.add(doc_id)
        owned[user.external_id] = ids
    for tenant in (alice.tenant, charlie.tenant):
        doc_id = f"catalog-{tenant.slug}-{es.index_prefix}"
        operations += [
            {"index": {"_index": es.tenant_index(tenant.memory_id), "_id": doc_id}},
            {"tenant_id": tenant.memory_id, "text": f"{tenant.name} catalog entry"},
        ]
        owned[f"catalog:{tenant.slug}"] = {doc_id}
    result = client.bulk(operations=operations, refresh="wait_for")
    assert not result["errors"]
    return owned


def test_a_scoped_key_sees_only_its_user_and_its_tenant_catalog(
    es, seeded, alice, bob, charlie, dave
):
    for user in (alice, bob, charlie, dave):
        scoped_key_provision(user=user)

    for user in (alice, bob, charlie, dave):
        expected = seeded[user.external_id] | seeded[f"catalog:{user.tenant.slug}"]
        assert visible_ids(es, user.current_key()) == expected, user.external_id


def test_a_scoped_key_cannot_write(es, seeded, alice):
    key = scoped_key_provision(user=alice)

    with pytest.raises(AuthorizationException):
        as_key(es, key).index(
            index=es.tenant_index(alice.memory_tenant_id),
            document={"tenant_id": alice.memory_tenant_id, "user_id": alice.memory_id, "text": "x"},
        )


def test_a_scoped_key_has_search_only(es, seeded, alice, bob):
    """No term vectors, explain, get / mget by id (also not of its own documents), no field
    caps: those show an index's statistics or documents outside the DLS query."""
    key = scoped_key_provision(user=alice)
    client, index = as_key(es, key), es.tenant_index(alice.memory_tenant_id)
    mine = sorted(seeded["alice"])[0]
    bobs = sorted(seeded["bob"])[0]
    refused = {
        "termvectors": lambda: client.termvectors(index=index, id=mine, term_statistics=True),
        "mtermvectors": lambda: client.mtermvectors(index=index, ids=[mine]),
        "explain": lambda: client.explain(index=index, id=mine, query={"match_all": {}}),
        "get": lambda: client.get(index=index, id=bobs),
        "mget": lambda: client.mget(index=index, ids=[bobs]),
        "field_caps": lambda: client.field_caps(index=index, fields="*"),
    }
    for name, call in refused.items():
        with pytest.raises(AuthorizationException):
            call()
            pytest.fail(f"{name} answered")
    # Recall's own calls work (and count, which is a search), within the DLS query.
    assert client.count(index=index)["count"] == 7
    assert client.search(index=index, size=0)["hits"]["total"]["value"] == 7
    msearch = client.msearch(searches=[{"index": index}, {"query": {"match_all": {}}}])
    assert msearch["responses"][0]["hits"]["total"]["value"] == 7


def test_a_key_names_exactly_its_tenant_index_its_archive_and_expires(es, alice):
    key = scoped_key_provision(user=alice)
    info = admin_client(es).security.get_api_key(id=key.key_id, owner=True)["api_keys"][0]
    role = info["role_descriptors"]["atlas_memory_reader"]["indices"]

    index = es.tenant_index(alice.memory_tenant_id)
    assert [r["names"] for r in role] == [[index, f"{index}-archive"]]
    assert sorted(role[0]["privileges"]) == [
        "indices:data/read/msearch",
        "indices:data/read/search",
    ]
    assert info["expiration"] is not None
    assert key.expires_at is not None
    assert info["metadata"]["atlas_user_id"] == alice.memory_id


def test_the_secret_is_encrypted_at_rest(es, alice):
    key = scoped_key_provision(user=alice)
    secret = scoped_key_credentials(key=key).secret

    assert secret not in key.encrypted_secret
    assert decrypt(key.encrypted_secret) == secret
    assert AuditEvent.objects.filter(action="key.provision", subject_user=alice).count() == 1


def test_provisioning_twice_is_refused(es, alice):
    scoped_key_provision(user=alice)

    with pytest.raises(Conflict):
        scoped_key_provision(user=alice)
    assert ScopedKey.objects.filter(user=alice).count() == 1


def test_after_rotation_the_new_key_works_and_the_old_key_is_rejected(es, seeded, alice):
    old = scoped_key_provision(user=alice)
    expected = seeded["alice"] | seeded["catalog:acme"]

    rotation = scoped_key_rotate(user=alice)

    assert rotation.old_key_invalidated
    assert rotation.key.rotated_from == old
    assert visible_ids(es, rotation.key) == expected
    with pytest.raises(AuthenticationException):
        visible_ids(es, old)
    old.refresh_from_db()
    assert old.status == ScopedKey.Status.INVALIDATED and old.invalidated_at is not None
    assert alice.current_key() == rotation.key
    assert AuditEvent.objects.filter(action="key.rotate", subject_user=alice).count() == 1


def test_rotation_during_an_outage_keeps_the_old_key_and_reports_it(es, seeded, alice, settings):
    old = scoped_key_provision(user=alice)
    settings.ATLAS_ES_URL = "http://127.0.0.1:9"  # nothing listens there: the cluster is "down"

    with pytest.raises(ClusterUnavailable) as exc:
        scoped_key_rotate(user=alice)

    assert "create an API key" in exc.value.message
    assert list(ScopedKey.objects.filter(user=alice)) == [old]
    assert alice.current_key() == old
    assert AuditEvent.objects.filter(action="key.rotate").count() == 0
    assert visible_ids(es, old) == seeded["alice"] | seeded["catalog:acme"]


def test_a_failed_final_invalidation_leaves_the_old_key_pending_until_retried(
    es, seeded, alice, monkeypatch
):
    old = scoped_key_provision(user=alice)

    def refuse(self, key_id):
        raise ClusterUnavailable("cluster went away")

    with monkeypatch.context() as patch:
        patch.setattr(Cluster, "invalidate_api_key", refuse)
        rotation = scoped_key_rotate(user=alice)

    assert not rotation.old_key_invalidated
    old.refresh_from_db()
    assert old.status == ScopedKey.Status.PENDING_INVALIDATION
    assert visible_ids(es, old)  # still valid on the cluster: nothing claims otherwise
    assert visible_ids(es, rotation.key) == seeded["alice"] | seeded["catalog:acme"]

    scoped_key_invalidate(key=old)

    with pytest.raises(AuthenticationException):
        visible_ids(es, old)
    assert old.status == ScopedKey.Status.INVALIDATED


def test_the_cluster_licence_allows_document_level_security(es):
    assert Cluster(es).dls_available()


@pytest.mark.django_db(transaction=True)
def test_keys_are_created_and_invalidated_on_the_cluster_with_no_row_locked(es, alice, monkeypatch):
    from django.db import connection

    calls = []
    create, invalidate = Cluster.create_api_key, Cluster.invalidate_api_key

    def watched_create(self, **kwargs):
        calls.append(("create", connection.in_atomic_block))
        return create(self, **kwargs)

    def watched_invalidate(self, key_id):
        calls.append(("invalidate", connection.in_atomic_block))
        return invalidate(self, key_id)

    monkeypatch.setattr(Cluster, "create_api_key", watched_create)
    monkeypatch.setattr(Cluster, "invalidate_api_key", watched_invalidate)

    key = scoped_key_provision(user=alice)
    scoped_key_rotate(user=alice)
    scoped_key_invalidate(key=alice.current_key())

    assert calls == [
        ("create", False),
        ("create", False),
        ("invalidate", False),
        ("invalidate", False),
    ]
    assert key.status == ScopedKey.Status.ACTIVE  # the row as provisioned


def test_a_rotation_that_loses_a_race_invalidates_the_key_it_made(es, seeded, alice, monkeypatch):
    old = scoped_key_provision(user=alice)
    made = []
    create = Cluster.create_api_key

    def create_while_another_rotates(self, **kwargs):
        key = create(self, **kwargs)
        made.append(key)
        # Meanwhile another operator's rotation (or an invalidation) took the old key.
        ScopedKey.objects.filter(pk=old.pk).update(status=ScopedKey.Status.PENDING_INVALIDATION)
        return key

    monkeypatch.setattr(Cluster, "create_api_key", create_while_another_rotates)

    with pytest.raises(Conflict):
        scoped_key_rotate(user=alice)

    assert list(ScopedKey.objects.filter(user=alice)) == [old]
    assert AuditEvent.objects.filter(action="key.rotate").count() == 0
    with pytest.raises(AuthenticationException):
        Cluster(es).as_api_key(made[0]).search(index=f"{es.index_prefix}-*", size=1)


def test_a_provisioning_that_loses_a_race_invalidates_the_key_it_made(es, alice, monkeypatch):
    from django.db import transaction

    from tenants.services import scoped_keys

    made = []
    create = scoped_keys.create_cluster_key

    def create_while_another_provisions(cluster, user):
        key = create(cluster, user)
        made.append(key)
        if len(made) == 1:  # meanwhile another provisioning of the same user committed first
            with transaction.atomic():
                scoped_keys.key_row(user=user, api_key=create(cluster, user))
        return key

    monkeypatch.setattr(scoped_keys, "create_cluster_key", create_while_another_provisions)

    with pytest.raises(Conflict):
        scoped_key_provision(user=alice)

    assert ScopedKey.objects.filter(user=alice).count() == 1  # the other one's
    assert ScopedKey.objects.get(user=alice).key_id != made[0].id
    with pytest.raises(AuthenticationException):
        Cluster(es).as_api_key(made[0]).search(index=f"{es.index_prefix}-*", size=1)


def test_disabling_a_user_kills_their_key_on_the_cluster_and_enabling_makes_a_new_one(
    es, seeded, alice
):
    from tenants.services.users import user_set_status

    key = scoped_key_provision(user=alice)
    assert visible_ids(es, key)  # it works

    user_set_status(user=alice, status=User.Status.DISABLED)

    with pytest.raises(AuthenticationException):
        visible_ids(es, key)
    key.refresh_from_db()
    assert key.status == ScopedKey.Status.INVALIDATED and alice.current_key() is None

    user_set_status(user=User.objects.get(pk=alice.pk), status=User.Status.ACTIVE)

    fresh = alice.current_key()
    assert fresh is not None and fresh.key_id != key.key_id
    assert visible_ids(es, fresh) == seeded["alice"] | seeded["catalog:acme"]


def test_suspending_a_tenant_kills_its_keys_at_once(es, seeded, alice, bob, charlie):
    from tenants.services.tenants import tenant_reactivate, tenant_suspend

    keys = {u.external_id: scoped_key_provision(user=u) for u in (alice, bob, charlie)}

    tenant_suspend(tenant=alice.tenant)

    for name in ("alice", "bob"):
        with pytest.raises(AuthenticationException):
            visible_ids(es, keys[name])
    assert visible_ids(es, keys["charlie"])  # another tenant's keys live on

    tenant_reactivate(tenant=alice.tenant)
    for user in (alice, bob):
        fresh = user.current_key()
        assert fresh is not None and fresh.key_id != keys[user.external_id].key_id
        assert visible_ids(es, fresh)


def test_keys_near_expiry_are_renewed_by_the_scheduled_task(es, seeded, alice, bob, settings):
    from datetime import timedelta

    from django.utils import timezone

    from tenants.tasks import scoped_keys_renew_task

    near = scoped_key_provision(user=alice)
    far = scoped_key_provision(user=bob)
    ScopedKey.objects.filter(pk=near.pk).update(expires_at=timezone.now() + timedelta(hours=1))

    result = scoped_keys_renew_task.apply().get()

    assert result["rotated"] == 1 and result["failed"] == 0
    near.refresh_from_db()
    assert near.status == ScopedKey.Status.INVALIDATED
    renewed = alice.current_key()
    assert renewed is not None and renewed.rotated_from_id == near.pk
    assert renewed.expires_at is not None and renewed.expires_at > timezone.now() + timedelta(
        days=6
    )
    assert bob.current_key() == far
    with pytest.raises(AuthenticationException):
        visible_ids(es, near)
    assert "scoped-keys-renew" in settings.CELERY_BEAT_SCHEDULE


def test_a_key_made_before_the_archive_is_rotated_to_name_it(es, alice, monkeypatch):
    from tenants.services import scoped_keys

    index = es.tenant_index(alice.memory_tenant_id)
    with monkeypatch.context() as before_the_archive:
        before_the_archive.setattr(scoped_keys, "key_indices", lambda cluster, user: [index])
        old = scoped_key_provision(user=alice)
    assert scoped_keys.scoped_key_names_indices(user=alice) is False

    assert scoped_keys.scoped_key_ensure_indices(user=alice) is True

    new = ScopedKey.objects.get(user=alice, status="active")
    assert new.pk != old.pk
    info = admin_client(es).security.get_api_key(id=new.key_id, owner=True)["api_keys"][0]
    names = info["role_descriptors"]["atlas_memory_reader"]["indices"][0]["names"]
    assert names == [index, f"{index}-archive"]
    assert scoped_keys.scoped_key_ensure_indices(user=alice) is False  # up to date: kept

    # Found up to date once, the key is not read from the cluster again (the daily archive
    # run checks every user): a rotation (a new key id) is read afresh.
    from atlas_platform import cluster

    reads: list[str] = []

    def counted_call(what, fn):
        reads.append(what)
        return cluster.cluster_call(what, fn)

    monkeypatch.setattr(scoped_keys, "cluster_call", counted_call)
    assert scoped_keys.scoped_key_ensure_indices(user=alice) is False
    assert reads == []
    scoped_keys.scoped_key_rotate(user=alice)
    assert scoped_keys.scoped_key_names_indices(user=alice) is True
    assert reads.count("read an API key") == 1
