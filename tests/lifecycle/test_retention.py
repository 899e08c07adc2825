"""Retention an operator can set (issue 35, part 3), on the embedded store and Elasticsearch:
old episodes and old audit events / receipts go, on a schedule, except what a legal hold or
an open forget request names; a legal hold is an audited operator action, shown in the admin
and in the user export."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from atlas_platform.exceptions import Conflict, ValidationError
from erasure.models import ForgetRequest
from lifecycle.services.retention import retention_enforce
from lifecycle.tasks import retention_enforce_task
from memory.selectors import memory_counts
from memory.services.writes import memory_turn_record, memory_write
from tenants.api.export import ExportUserOut
from tenants.models import AuditEvent, Tenant, User
from tenants.services.legal_hold import user_legal_hold_place, user_legal_hold_release
from tenants.services.tenants import tenant_update

pytestmark = pytest.mark.django_db


def episodes(user: User, n: int) -> None:
    for i in range(n):
        memory_turn_record(user=user, text=f"turn {i} of {user.external_id} about the garden")


def open_request(user: User, status: str = "pending") -> ForgetRequest:
    return ForgetRequest.objects.create(
        tenant=user.tenant,
        user=user,
        user_ref=user.memory_id,
        scope="user",
        status=status,
        requested_by_type="operator",
        requested_by_id="1",
        requested_by_label="test",
    )


def test_old_episodes_go_except_a_held_users_and_one_named_by_an_open_request(
    store: str, acme: Tenant, alice: User, bob: User
) -> None:
    carol = User.objects.create(tenant=acme, external_id="carol")
    tenant_update(tenant=acme, episode_retention_days=30)
    for user in (alice, bob, carol):
        episodes(user, 3)
    fact = memory_write(user=alice, text="Alice grows tomatoes", memory_type="semantic")
    user_legal_hold_place(user=bob)
    open_request(carol)

    early = retention_enforce(now=timezone.now() + timedelta(days=29))
    run = retention_enforce(now=timezone.now() + timedelta(days=31))

    assert early.episodes == {"acme": 0}
    assert run.episodes == {"acme": 3}
    assert memory_counts(user=alice).get("episodic", 0) == 0
    assert memory_counts(user=alice)["semantic"] == 1 and fact.id
    assert memory_counts(user=bob)["episodic"] == 3  # held
    assert memory_counts(user=carol)["episodic"] == 3  # named by a pending forget request
    event = AuditEvent.objects.get(action="retention.episodes")
    assert event.subject_user == alice and event.metadata["deleted"] == 3

    user_legal_hold_release(user=bob)
    again = retention_enforce(now=timezone.now() + timedelta(days=31))
    assert again.episodes == {"acme": 3}
    assert memory_counts(user=bob).get("episodic", 0) == 0


def test_a_tenant_without_retention_keeps_everything(store: str, acme: Tenant, alice: User) -> None:
    episodes(alice, 2)

    run = retention_enforce(now=timezone.now() + timedelta(days=3650))

    assert run.episodes == {} and run.audit_events == {}
    assert memory_counts(user=alice)["episodic"] == 2


def test_old_audit_events_and_receipts_go_above_the_floor_but_not_a_held_users(
    acme: Tenant, alice: User, bob: User, settings: Any
) -> None:
    settings.ATLAS_AUDIT_RETENTION_FLOOR_DAYS = 10
    with pytest.raises(ValidationError, match="ATLAS_AUDIT_RETENTION_FLOOR_DAYS"):
        tenant_update(tenant=acme, audit_retention_days=5)
    tenant_update(tenant=acme, audit_retention_days=20)
    user_legal_hold_place(user=bob)  # an event about bob, kept while he is held
    done = open_request(alice, status="done")
    open_request(bob, status="done")
    before = AuditEvent.objects.filter(tenant=acme).count()

    assert retention_enforce(now=timezone.now() + timedelta(days=19)).audit_events == {"acme": 0}
    run = retention_enforce(now=timezone.now() + timedelta(days=21))

    about_bob = AuditEvent.objects.filter(subject_user=bob).count()
    assert about_bob >= 1
    # Every other event goes, the run's own retention.receipts too (old on the moved clock).
    assert run.audit_events == {"acme": before - about_bob + 1}
    assert run.receipts == {"acme": 1}
    assert not ForgetRequest.objects.filter(pk=done.pk).exists()
    left = set(AuditEvent.objects.filter(tenant=acme).values_list("action", flat=True))
    assert left == {"user.legal_hold_place", "audit.expire"}
    expire = AuditEvent.objects.get(action="audit.expire")
    assert expire.metadata["deleted"] == before - about_bob + 1


def test_a_legal_hold_is_audited_shown_in_the_export_and_refused_twice(alice: User) -> None:
    user_legal_hold_place(user=alice)
    alice.refresh_from_db()

    assert ExportUserOut(alice).data["legal_hold_at"] is not None
    assert AuditEvent.objects.filter(action="user.legal_hold_place", subject_user=alice).exists()
    with pytest.raises(Conflict):
        user_legal_hold_place(user=alice)
    user_legal_hold_release(user=alice)
    alice.refresh_from_db()
    assert ExportUserOut(alice).data["legal_hold_at"] is None
    assert AuditEvent.objects.filter(action="user.legal_hold_release").count() == 1


def test_an_operator_places_a_hold_from_the_admin_and_an_auditor_cannot(
    alice: User, acme_client: Client, auditor_client: Client
) -> None:
    url = "/admin/tenants/user/"
    body = {"action": "place_legal_hold", "_selected_action": [alice.pk]}

    auditor_client.post(url, body)
    alice.refresh_from_db()
    assert alice.legal_hold_at is None

    response = acme_client.post(url, body, follow=True)
    alice.refresh_from_db()
    assert alice.legal_hold_at is not None and alice.legal_hold_by
    assert b"legal hold" in response.content.lower()


def test_beat_runs_retention_as_the_system(
    acme: Tenant, alice: User, settings: Any, tmp_path: Any
) -> None:
    settings.ATLAS_MEMORY_BACKEND = "embedded"
    settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")
    tenant_update(tenant=acme, episode_retention_days=0)  # everything stored before now goes
    episodes(alice, 2)

    retention_enforce_task()

    assert settings.CELERY_BEAT_SCHEDULE["lifecycle-retention"]["task"] == (
        retention_enforce_task.name
    )
    assert memory_counts(user=alice).get("episodic", 0) == 0
    event = AuditEvent.objects.get(action="retention.episodes")
    assert (event.actor_type, event.actor_label) == ("system", "retention")
