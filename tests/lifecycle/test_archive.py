"""Superseded facts leave the hot index (issue 35, part 2), on the embedded store and
Elasticsearch: beat moves facts superseded longer ago than the tenant's ``archive_after_days``
into the archive; recall without superseded facts no longer searches them, while
``include_superseded``, history, the export and erasure reach them as before; retention deletes
archived facts after ``archive_retention_days``, except a held user's or one an open forget
request names; a backup carries the archive and a restore brings it back."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from erasure.models import ForgetRequest
from lifecycle.services.archive import archive_superseded
from lifecycle.services.backup import deployment_backup
from lifecycle.services.restore import deployment_restore
from lifecycle.services.retention import retention_enforce
from lifecycle.tasks import archive_superseded_task
from memory.selectors import memory_counts, memory_export, memory_get, memory_history
from memory.services.archive import memory_archived_count
from memory.services.recall import memory_recall
from memory.services.writes import memory_forget, memory_write
from tenants.models import AuditEvent, Tenant, User
from tenants.services.legal_hold import user_legal_hold_place
from tenants.services.scoped_keys import scoped_key_provision
from tenants.services.tenants import tenant_update
from tests.lifecycle.test_restore_drill import lose_everything


def moved_chain(user: User) -> tuple[str, str, str]:
    """A fact, the fact that superseded it, and one more current fact."""
    old = memory_write(user=user, text="Alice's sister lives in Lisbon", memory_type="semantic")
    new = memory_write(
        user=user, text="Alice's sister moved to Porto", memory_type="semantic",
        supersedes=[old.id],
    )  # fmt: skip
    other = memory_write(user=user, text="Alice prefers green tea", memory_type="semantic")
    return old.id, new.id, other.id


def archived(user: User) -> int:
    return memory_archived_count(tenant_id=user.tenant.memory_id, user_id=user.memory_id)


def recalled(user: User, query: str, **kwargs: Any) -> list[str]:
    # No usage bumps: a bump landing mid-move keeps a fact in the hot index until the next run.
    hits = memory_recall(user=user, query=query, k=10, track_usage=False, **kwargs).hits
    return [h.doc.id for h in hits]


@pytest.mark.django_db
def test_superseded_facts_move_to_the_archive_and_stay_readable(
    store: str, acme: Tenant, alice: User
) -> None:
    old, new, other = moved_chain(alice)
    counts = memory_counts(user=alice)
    asked = recalled(alice, "where does the sister live Lisbon", include_superseded=True)
    assert old in asked
    tenant_update(tenant=acme, archive_after_days=30)

    early = archive_superseded(now=timezone.now() + timedelta(days=29))
    run = archive_superseded(now=timezone.now() + timedelta(days=31))

    assert early.moved == {"acme": 0} and run.moved == {"acme": 1}
    assert archived(alice) == 1
    event = AuditEvent.objects.get(action="archive.superseded")
    assert event.subject_user == alice and event.metadata["moved"] == 1
    # Recall of current facts: the hot index only; superseded ones asked for: the archive too.
    assert old not in recalled(alice, "where does the sister live Lisbon")
    assert old in recalled(alice, "where does the sister live Lisbon", include_superseded=True)
    # By id, the chain, the counts and the export: as before.
    assert memory_get(user=alice, memory_id=old).superseded_by == new
    assert [d.id for d in memory_history(user=alice, memory_id=new)] == [old, new]
    assert memory_counts(user=alice) == counts
    assert {d.id for d in memory_export(user=alice)} == {old, new, other}
    # A forget of an archived fact forgets it there.
    memory_forget(user=alice, memory_id=old)
    assert archived(alice) == 0
    assert [d.id for d in memory_history(user=alice, memory_id=new)] == [new]


def _open_request(user: User) -> None:
    ForgetRequest.objects.create(
        tenant=user.tenant,
        user=user,
        user_ref=user.memory_id,
        scope="user",
        status="pending",
        requested_by_type="operator",
        requested_by_id="1",
        requested_by_label="test",
    )


@pytest.mark.django_db
def test_retention_deletes_old_archived_facts_but_not_a_held_users_or_a_named_ones(
    store: str, acme: Tenant, alice: User, bob: User
) -> None:
    carol = User.objects.create(tenant=acme, external_id="carol")
    chains = {user.pk: moved_chain(user) for user in (alice, bob, carol)}
    tenant_update(tenant=acme, archive_after_days=0, archive_retention_days=90)
    archive_superseded(now=timezone.now() + timedelta(seconds=1))
    assert [archived(u) for u in (alice, bob, carol)] == [1, 1, 1]
    user_legal_hold_place(user=bob)
    _open_request(carol)

    early = retention_enforce(now=timezone.now() + timedelta(days=89))
    run = retention_enforce(now=timezone.now() + timedelta(days=91))

    assert early.archived_facts == {"acme": 0}
    assert run.archived_facts == {"acme": 1}
    assert [archived(u) for u in (alice, bob, carol)] == [0, 1, 1]
    _, new, _ = chains[alice.pk]
    assert [d.id for d in memory_history(user=alice, memory_id=new)] == [new]
    event = AuditEvent.objects.get(action="retention.archived_facts")
    assert event.subject_user == alice and event.metadata["deleted"] == 1


@pytest.mark.django_db
def test_beat_runs_the_archive_as_the_system(
    acme: Tenant, alice: User, settings: Any, tmp_path: Any
) -> None:
    settings.ATLAS_MEMORY_BACKEND = "embedded"
    settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")
    moved_chain(alice)
    tenant_update(tenant=acme, archive_after_days=0)

    archive_superseded_task()

    task = settings.CELERY_BEAT_SCHEDULE["lifecycle-archive"]["task"]
    assert task == archive_superseded_task.name
    assert archived(alice) == 1
    event = AuditEvent.objects.get(action="archive.superseded")
    assert (event.actor_type, event.actor_label) == ("system", "archive")


@pytest.mark.django_db(transaction=True)
def test_a_backup_carries_the_archive_and_a_restore_brings_it_back(
    deployment: str, tmp_path: Path, settings: Any
) -> None:
    mode = Tenant.IsolationMode.DLS if deployment == "es-dls" else Tenant.IsolationMode.FILTER
    acme = Tenant.objects.create(slug="acme", name="Acme", isolation_mode=mode)
    alice = User.objects.create(tenant=acme, external_id="alice")
    if deployment == "es-dls":
        scoped_key_provision(user=alice)
    old, new, _ = moved_chain(alice)
    tenant_update(tenant=acme, archive_after_days=0)
    archive_superseded(now=timezone.now() + timedelta(seconds=1))
    assert archived(alice) == 1

    manifest = deployment_backup()
    lose_everything(deployment, tmp_path, settings)
    deployment_restore(source=Path(manifest["path"]))

    alice = User.objects.get(pk=alice.pk)
    assert archived(alice) == 1
    assert memory_get(user=alice, memory_id=old).superseded_by == new
    assert [d.id for d in memory_history(user=alice, memory_id=new)] == [old, new]
    assert old in recalled(alice, "where does the sister live Lisbon", include_superseded=True)
    assert old not in recalled(alice, "where does the sister live Lisbon")
    # The manifest's counts hold the archived fact (three facts, one of them archived).
    assert manifest["counts"][acme.memory_id]["memories"] == {"semantic": 3}


@pytest.mark.django_db
def test_under_dls_a_key_made_before_the_archive_is_rotated_so_the_user_reads_it(
    es: Any, settings: Any, monkeypatch: Any
) -> None:
    from tenants.services import scoped_keys

    settings.ATLAS_MEMORY_BACKEND = "elasticsearch"
    acme = Tenant.objects.create(slug="acme", name="Acme", isolation_mode="dls")
    alice = User.objects.create(tenant=acme, external_id="alice")
    index = es.tenant_index(acme.memory_id)
    with monkeypatch.context() as before_the_archive:
        before_the_archive.setattr(scoped_keys, "key_indices", lambda cluster, user: [index])
        scoped_key_provision(user=alice)
    old, _, _ = moved_chain(alice)
    tenant_update(tenant=acme, archive_after_days=0)

    archive_superseded(now=timezone.now() + timedelta(seconds=1))

    assert archived(alice) == 1
    assert AuditEvent.objects.filter(action="key.rotate", subject_user=alice).count() == 1
    assert old in recalled(alice, "where does the sister live Lisbon", include_superseded=True)
    assert memory_get(user=alice, memory_id=old).id == old
