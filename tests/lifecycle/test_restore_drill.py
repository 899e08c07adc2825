"""The restore drill (issue 35): write, back up, write more, forget some of both, lose the
deployment, restore the backup into an empty one; then every acknowledged write older than
the backup is back, every erased memory stays erased, revoked credentials stay revoked, and
recall answers as before. On the embedded default and on Elasticsearch (dls) + PostgreSQL."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone
from elasticsearch import Elasticsearch

from atlas_platform.exceptions import AuthenticationFailed, NotFound, ValidationError
from atlas_platform.tombstones import tombstones_since
from erasure.models import ForgetRequest
from erasure.services import forget_request_execute
from lifecycle.services.backup import deployment_backup
from lifecycle.services.restore import RestoreRefused, deployment_restore
from memory.selectors import memory_counts, memory_get
from memory.services.recall import memory_recall
from memory.services.writes import memory_forget, memory_write
from tenants.models import AuditEvent, ScopedKey, Tenant, User
from tenants.services.scoped_keys import scoped_key_provision, scoped_key_rotate
from tenants.services.tokens import token_authenticate, token_issue, token_revoke

pytestmark = pytest.mark.django_db(transaction=True)

ALICE_FACTS = [
    "Alice prefers green tea in the morning",
    "Alice's sister lives in Lisbon",
    "Alice runs the Atlas deployment at work",
    "Alice is allergic to peanuts",
]
CHARLIE_FACTS = ["Charlie drives a blue bicycle", "Charlie writes Rust at Globex"]
QUERIES = ["what does Alice drink", "where does the sister live", "food allergy", "work"]


def write(user: User, text: str) -> str:
    return memory_write(user=user, text=text, memory_type="semantic").id


def hits(user: User, query: str) -> list[str]:
    """The recall's ids, without noting a use: a use bumps the facts' ``use_count`` and
    ``last_used_at`` (ranking signals) from a background flush, so whether the backup held
    the bumps of the reads before it depended on that flush's timing, and the order of two
    near-tied hits with it."""
    recalled = memory_recall(user=user, query=query, k=10, track_usage=False)
    return [h.doc.id for h in recalled.hits]


def erase_user(user: User) -> ForgetRequest:
    """A whole user's erasure, run in-process as the worker runs it."""
    request = ForgetRequest.objects.create(
        tenant=user.tenant,
        user=user,
        user_ref=user.memory_id,
        scope=ForgetRequest.Scope.USER,
        status=ForgetRequest.Status.APPROVED,
        requested_by_type="operator",
        requested_by_id="1",
        requested_by_label="drill",
        decided_at=timezone.now(),
    )
    done = forget_request_execute(request_id=request.pk)
    assert done is not None and done.status == "done"
    return done


def lose_everything(kind: str, tmp_path: Path, settings: Any) -> None:
    """The disaster: an empty database, an empty store (the tombstone log lives apart)."""
    call_command("flush", interactive=False, verbosity=0)
    if kind == "embedded":
        settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "new-memory.sqlite3")
        return
    admin = Elasticsearch(
        settings.ATLAS_ES_URL, basic_auth=(settings.ATLAS_ES_USERNAME, settings.ATLAS_ES_PASSWORD)
    )
    admin.indices.delete(index=f"{settings.ATLAS_ES_INDEX_PREFIX}-t-*", allow_no_indices=True)


def test_a_restore_brings_back_what_was_acknowledged_and_nothing_that_was_erased(
    deployment: str, tmp_path: Path, settings: Any
) -> None:
    mode = Tenant.IsolationMode.DLS if deployment == "es-dls" else Tenant.IsolationMode.FILTER
    acme = Tenant.objects.create(slug="acme", name="Acme", isolation_mode=mode)
    globex = Tenant.objects.create(slug="globex", name="Globex", isolation_mode=mode)
    alice = User.objects.create(tenant=acme, external_id="alice")
    bob = User.objects.create(tenant=acme, external_id="bob")
    charlie = User.objects.create(tenant=globex, external_id="charlie")
    if deployment == "es-dls":
        for user in (alice, bob, charlie):
            scoped_key_provision(user=user)
    alice_ids = [write(alice, t) for t in ALICE_FACTS]
    bob_ids = [write(bob, "Bob keeps bees on the roof"), write(bob, "Bob's car is red")]
    charlie_ids = [write(charlie, t) for t in CHARLIE_FACTS]
    revoked, kept = (token_issue(tenant=acme, user=alice, name=n) for n in ("old", "kept"))
    before = {
        (u.external_id, q): hits(u, q) for u in (alice, charlie) for q in [*QUERIES, "bicycle"]
    }
    old_key = ScopedKey.objects.filter(user=alice, status="active").first()

    manifest = deployment_backup()

    # After the backup: more writes, forgets of old and new, a whole user erased, a token
    # revoked, alice's key rotated (the old one dead on the cluster).
    later = write(alice, "Alice moved to Porto last week")
    memory_forget(user=alice, memory_id=alice_ids[1])
    memory_forget(user=alice, memory_id=later)
    erase_user(bob)
    token_revoke(token=revoked.token)
    if old_key is not None:
        scoped_key_rotate(user=alice)

    lose_everything(deployment, tmp_path, settings)
    report = deployment_restore(source=Path(manifest["path"]))

    alice, charlie = User.objects.get(pk=alice.pk), User.objects.get(pk=charlie.pk)
    # Every acknowledged write older than the backup is back, but for what was erased.
    for memory_id in [alice_ids[0], *alice_ids[2:]]:
        assert memory_get(user=alice, memory_id=memory_id).id == memory_id
    for memory_id in charlie_ids:
        assert memory_get(user=charlie, memory_id=memory_id).id == memory_id
    # Erased stays erased: a forget of an old write, the whole of bob.
    for memory_id in (alice_ids[1], later):
        with pytest.raises(NotFound):
            memory_get(user=alice, memory_id=memory_id)
    assert sum(memory_counts(user=User.objects.get(pk=bob.pk)).values()) == 0
    for memory_id in bob_ids:
        with pytest.raises(NotFound):
            memory_get(user=User.objects.get(pk=bob.pk), memory_id=memory_id)
    # Revoked stays revoked; the other token still works.
    with pytest.raises(AuthenticationFailed):
        token_authenticate(raw=revoked.secret)
    assert token_authenticate(raw=kept.secret).pk == kept.token.pk
    # The report lists each re-applied entry with what it did.
    outcomes = [(line["kind"], line["outcome"]) for line in report["reapplied"]]
    assert outcomes[:4] == [
        ("memory.forget", "deleted again"),
        ("memory.forget", "not in the backup"),
        ("erasure", "done"),
        ("token.revoke", "revoked again"),
    ]
    assert report["reapplied"][0]["deleted"] == [alice_ids[1]]
    assert report["reapplied"][2]["deleted"] == len(bob_ids)
    # A key that died after the backup does not come back to life; alice has a live one.
    if old_key is not None:
        assert report["keys_invalidated"] == [old_key.key_id]
        assert ScopedKey.objects.get(pk=old_key.pk).status == "invalidated"
        assert ScopedKey.objects.filter(user=alice, status="active").count() == 1
    else:
        assert report["keys_invalidated"] == []
    # Recall answers as before: the same hits, less what was erased.
    for (name, query), ids in before.items():
        user = alice if name == "alice" else charlie
        expected = [i for i in ids if i != alice_ids[1]]
        if name == "charlie":
            assert hits(user, query) == expected
        else:
            assert sorted(hits(user, query)) == sorted(expected)
    assert AuditEvent.objects.filter(action="deployment.restore").count() == 1
    # Nothing of the erased text is in the tombstone log.
    assert "Lisbon" not in repr(tombstones_since(0))


def test_it_refuses_a_target_that_is_not_empty_and_a_corrupt_backup(
    deployment: str, tmp_path: Path, settings: Any
) -> None:
    acme = Tenant.objects.create(slug="acme", name="Acme", isolation_mode="filter")
    alice = User.objects.create(tenant=acme, external_id="alice")
    kept = write(alice, "Alice prefers green tea in the morning")
    manifest = deployment_backup()
    source = Path(manifest["path"])

    with pytest.raises(RestoreRefused, match="not empty"):
        deployment_restore(source=source)
    assert memory_get(user=alice, memory_id=kept).id == kept

    database = source / manifest["database"]["file"]
    database.write_text(database.read_text().replace("alice", "mallory"))
    lose_everything(deployment, tmp_path, settings)
    with pytest.raises(ValidationError, match="checksum"):
        deployment_restore(source=source)
    assert not Tenant.objects.exists()


def test_it_refuses_another_deployments_backup_unless_told(
    deployment: str, tmp_path: Path, settings: Any
) -> None:
    acme = Tenant.objects.create(slug="acme", name="Acme", isolation_mode="filter")
    alice = User.objects.create(tenant=acme, external_id="alice")
    kept = write(alice, "Alice prefers green tea in the morning")
    manifest = deployment_backup()
    lose_everything(deployment, tmp_path, settings)
    ours = settings.ATLAS_DEPLOYMENT_ID
    settings.ATLAS_DEPLOYMENT_ID = "another-deployment"

    with pytest.raises(RestoreRefused, match="--allow-other-deployment"):
        deployment_restore(source=Path(manifest["path"]))
    assert not Tenant.objects.exists()

    settings.ATLAS_DEPLOYMENT_ID = ours  # its indices carry the backup's id
    deployment_restore(source=Path(manifest["path"]), allow_other_deployment=True)
    assert memory_get(user=User.objects.get(external_id="alice"), memory_id=kept).id == kept


def test_the_commands_print_the_manifest_and_the_report_and_say_why_they_refuse(
    tmp_path: Path, settings: Any
) -> None:
    settings.ATLAS_MEMORY_BACKEND = "embedded"
    settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")
    acme = Tenant.objects.create(slug="acme", name="Acme", isolation_mode="filter")
    kept = write(User.objects.create(tenant=acme, external_id="alice"), "Alice likes tea")
    out = io.StringIO()

    call_command("atlas_backup", into=str(tmp_path / "backups"), stdout=out)
    manifest = json.loads(out.getvalue())
    assert manifest["counts"][acme.memory_id]["memories"] == {"semantic": 1}
    assert set(manifest["checksums"]) == {"database.jsonl", "memory.sqlite3"}
    with pytest.raises(CommandError, match="not empty"):
        call_command("atlas_restore", manifest["path"])

    lose_everything("embedded", tmp_path, settings)
    out = io.StringIO()
    call_command("atlas_restore", manifest["path"], stdout=out)
    assert json.loads(out.getvalue())["backup"] == manifest["name"]
    alice = User.objects.get(external_id="alice")
    assert memory_get(user=alice, memory_id=kept).id == kept
