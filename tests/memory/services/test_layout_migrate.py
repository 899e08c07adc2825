"""``manage.py es_layout_migrate`` on the real cluster: documents of the index every tenant
once shared (primary keys as ids) move to their tenant's index with globally unique ids, and
between a tenant's index and its users' own when its statistics scope changes; keys are
rotated to name exactly the new indices."""

from __future__ import annotations

import io
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from django.core.management import call_command

from atlas_platform.cluster import Cluster
from memory.engine.elasticsearch.setup import load_template
from memory.services.common import embedder
from memory.services.recall import memory_recall
from memory.services.scoping import tenant_layout
from tenants.models import Tenant, User
from tenants.services.scoped_keys import scoped_key_provision

pytestmark = pytest.mark.django_db


@pytest.fixture
def cluster(es: Any, settings: Any) -> Any:
    settings.ATLAS_MEMORY_BACKEND = "elasticsearch"
    tenant_layout.clear()
    return es


def legacy_doc(tenant: Tenant, user: User | None, text: str) -> tuple[str, dict[str, Any]]:
    now = datetime.now(UTC).isoformat()
    doc_id = uuid.uuid4().hex
    source = {
        "id": doc_id,
        "tenant_id": str(tenant.pk),
        "memory_type": "semantic" if user else "catalog",
        "text": text,
        "created_at": now,
        "timestamp": now,
        "confidence": 1.0,
        "source": "agent",
    }
    if user is not None:
        source["user_id"] = str(user.pk)
    return doc_id, source


def migrate() -> str:
    out = io.StringIO()
    call_command("es_layout_migrate", "--delete-legacy", stdout=out)
    return out.getvalue()


def test_legacy_documents_move_to_their_tenants_index_with_global_ids(cluster):
    acme = Tenant.objects.create(slug="acme", name="Acme", isolation_mode="dls")
    globex = Tenant.objects.create(slug="globex", name="Globex", isolation_mode="dls")
    alice = User.objects.create(tenant=acme, external_id="alice")
    charlie = User.objects.create(tenant=globex, external_id="charlie")
    old_key = scoped_key_provision(user=alice)
    scoped_key_provision(user=charlie)
    writer = Cluster(cluster).client
    template = load_template("memory-component.json", cluster.index_prefix, embedder().dims)
    writer.indices.create(index=cluster.legacy_index, **template["template"])
    docs = [
        legacy_doc(acme, alice, "alice keeps her bicycle in the cellar"),
        legacy_doc(globex, charlie, "charlie keeps his bicycle on the balcony"),
        legacy_doc(acme, None, "acme catalog: bicycles are repaired on fridays"),
    ]
    operations: list[dict[str, Any]] = []
    for doc_id, source in docs:
        operations += [{"index": {"_index": cluster.legacy_index, "_id": doc_id}}, source]
    assert not writer.bulk(operations=operations, refresh="true")["errors"]

    output = migrate()

    assert "moved: 3" in output and "legacy index deleted: True" in output
    assert not writer.indices.exists(index=cluster.legacy_index)
    hits = memory_recall(user=alice, query="where is the bicycle", track_usage=False).hits
    assert sorted(h.doc.text for h in hits) == [
        "acme catalog: bicycles are repaired on fridays",
        "alice keeps her bicycle in the cellar",
    ]
    assert {h.doc.user_id for h in hits} == {alice.memory_id, None}
    old_key.refresh_from_db()
    assert old_key.status == "invalidated"
    assert "moved: 0" in migrate()  # idempotent


def test_a_change_of_statistics_scope_moves_a_users_documents(cluster):
    from memory.services.writes import memory_write

    acme = Tenant.objects.create(slug="acme", name="Acme", isolation_mode="dls")
    alice = User.objects.create(tenant=acme, external_id="alice")
    scoped_key_provision(user=alice)
    memory_write(user=alice, text="alice prefers green tea", memory_type="semantic")
    writer = Cluster(cluster).client
    user_index = cluster.user_index(acme.memory_id, alice.memory_id)

    Tenant.objects.filter(pk=acme.pk).update(statistics_scope="user")
    output = migrate()

    assert "moved: 1" in output
    assert writer.count(index=user_index)["count"] == 1
    assert writer.count(index=cluster.tenant_index(acme.memory_id))["count"] == 0
    key = alice.current_key()
    assert key is not None
    info = writer.security.get_api_key(id=key.key_id, owner=True)["api_keys"][0]
    names = info["role_descriptors"]["atlas_memory_reader"]["indices"][0]["names"]
    assert names == [user_index, cluster.tenant_index(acme.memory_id), f"{user_index}-archive"]
    hits = memory_recall(user=User.objects.get(pk=alice.pk), query="tea", track_usage=False).hits
    assert [h.doc.text for h in hits] == ["alice prefers green tea"]


def test_a_change_of_statistics_scope_moves_archived_facts_to_the_users_archive(cluster):
    from datetime import timedelta

    from memory.selectors import memory_history
    from memory.services.archive import memory_archive_superseded, memory_archived_count
    from memory.services.writes import memory_write

    acme = Tenant.objects.create(slug="acme", name="Acme", isolation_mode="dls")
    alice = User.objects.create(tenant=acme, external_id="alice")
    scoped_key_provision(user=alice)
    old = memory_write(user=alice, text="alice prefers black tea", memory_type="semantic")
    new = memory_write(
        user=alice, text="alice prefers green tea", memory_type="semantic", supersedes=[old.id]
    )
    ids: dict[str, str] = {"tenant_id": acme.memory_id, "user_id": alice.memory_id}
    memory_archive_superseded(**ids, before=datetime.now(UTC) + timedelta(seconds=1))
    writer = Cluster(cluster).client
    tenant_archive = cluster.archive_index(cluster.tenant_index(acme.memory_id))
    user_archive = cluster.archive_index(cluster.user_index(acme.memory_id, alice.memory_id))
    assert writer.count(index=tenant_archive)["count"] == 1

    Tenant.objects.filter(pk=acme.pk).update(statistics_scope="user")
    output = migrate()

    assert "moved: 2" in output  # the current fact to the user's index, the archived one beside it
    assert writer.count(index=user_archive)["count"] == 1
    assert writer.count(index=tenant_archive)["count"] == 0
    alice = User.objects.get(pk=alice.pk)
    assert memory_archived_count(tenant_id=ids["tenant_id"], user_id=ids["user_id"]) == 1
    assert [d.id for d in memory_history(user=alice, memory_id=new.id)] == [old.id, new.id]
