"""Every state-changing service leaves exactly one audit event; the log is append-only."""

from collections.abc import Callable

import pytest
from django.db import connection, transaction

from atlas_platform.context import Actor, acting_as, request_id
from tenants.models import AuditEvent, Operator, Tenant, User
from tenants.services.legal_hold import user_legal_hold_place, user_legal_hold_release
from tenants.services.scoped_keys import (
    scoped_key_invalidate,
    scoped_key_provision,
    scoped_key_rotate,
)
from tenants.services.tenants import (
    tenant_isolation_set,
    tenant_onboard,
    tenant_reactivate,
    tenant_suspend,
    tenant_update,
)
from tenants.services.tokens import token_issue, token_revoke
from tenants.services.users import operator_create, user_create, user_set_status

pytestmark = pytest.mark.django_db


def one_event(action: str, run: Callable[[], object]) -> AuditEvent:
    before = set(AuditEvent.objects.values_list("pk", flat=True))
    run()
    new = AuditEvent.objects.exclude(pk__in=before)
    assert [e.action for e in new] == [action]
    return new.get()


def test_every_tenant_service_leaves_exactly_one_event(acme, alice):
    one_event(
        "tenant.onboard",
        lambda: tenant_onboard(
            slug="initech",
            name="Initech",
            admin_username="ini",
            admin_password="correct-horse-battery-9",
        ),
    )
    one_event("tenant.update", lambda: tenant_update(tenant=acme, decay_offset_days=30))
    one_event("tenant.suspend", lambda: tenant_suspend(tenant=acme))
    one_event("tenant.reactivate", lambda: tenant_reactivate(tenant=acme))
    one_event("user.create", lambda: user_create(tenant=acme, external_id="zed"))
    one_event("user.disable", lambda: user_set_status(user=alice, status="disabled"))
    one_event("user.enable", lambda: user_set_status(user=alice, status="active"))
    one_event("user.legal_hold_place", lambda: user_legal_hold_place(user=alice))
    one_event("user.legal_hold_release", lambda: user_legal_hold_release(user=alice))
    one_event(
        "operator.create",
        lambda: operator_create(
            username="aud",
            password="correct-horse-battery-9",
            role=Operator.Role.AUDITOR,
            tenant=acme,
        ),
    )
    issued = token_issue(tenant=acme, user=alice, name="bot")
    one_event("token.revoke", lambda: token_revoke(token=issued.token))
    assert AuditEvent.objects.filter(action="token.issue").count() == 1


def test_the_isolation_switch_leaves_one_event_once_every_user_has_a_key(no_cluster, acme, alice):
    from atlas_platform.exceptions import Conflict
    from tenants.models import User

    before = AuditEvent.objects.count()
    with pytest.raises(Conflict, match="alice"):
        tenant_isolation_set(tenant=acme, mode="dls")
    assert AuditEvent.objects.count() == before and acme.isolation_mode == "filter"
    User.objects.filter(pk=alice.pk).update(status="disabled")  # a disabled user needs none

    event = one_event("tenant.isolation", lambda: tenant_isolation_set(tenant=acme, mode="dls"))

    assert event.metadata == {"changed": {"isolation_mode": ["filter", "dls"]}}


def test_on_a_cluster_the_switch_to_dls_also_provisions_the_catalog_key(es, acme):
    before = set(AuditEvent.objects.values_list("pk", flat=True))

    tenant_isolation_set(tenant=acme, mode="dls")

    new = AuditEvent.objects.exclude(pk__in=before).order_by("id")
    assert [e.action for e in new] == ["catalog_key.provision", "tenant.isolation"]


def test_every_key_service_leaves_exactly_one_event(es, alice):
    one_event("key.provision", lambda: scoped_key_provision(user=alice))
    one_event("key.rotate", lambda: scoped_key_rotate(user=alice))
    one_event("key.invalidate", lambda: scoped_key_invalidate(key=alice.current_key()))


def test_events_carry_the_actor_and_the_request_id(acme):
    actor = Actor(type="operator", id="7", label="ann")
    with acting_as(actor), request_id("req-12345678"):
        event = one_event("user.create", lambda: user_create(tenant=acme, external_id="zed"))

    assert (event.actor_type, event.actor_id, event.actor_label) == ("operator", "7", "ann")
    assert event.request_id == "req-12345678"
    assert event.subject_user == User.objects.get(external_id="zed")


def test_a_failed_service_leaves_no_event(acme):
    user_create(tenant=acme, external_id="zed")

    with pytest.raises(Exception, match="already exists"):
        user_create(tenant=acme, external_id="zed")

    assert AuditEvent.objects.filter(action="user.create").count() == 1


def test_audit_events_cannot_be_changed_or_deleted_through_the_orm(acme):
    event = one_event("tenant.suspend", lambda: tenant_suspend(tenant=acme))

    event.action = "tampered"
    with pytest.raises(TypeError):
        event.save()
    with pytest.raises(TypeError):
        event.delete()
    with pytest.raises(TypeError):
        AuditEvent.objects.filter(pk=event.pk).update(action="tampered")
    with pytest.raises(TypeError):
        AuditEvent.objects.all().delete()
    assert AuditEvent.objects.get(pk=event.pk).action == "tenant.suspend"


def test_postgresql_refuses_raw_updates_and_deletes_of_audit_rows(acme):
    if connection.vendor != "postgresql":
        pytest.skip("the trigger is PostgreSQL's; SQLite relies on the model guards")
    tenant_suspend(tenant=acme)
    for sql in ("UPDATE tenants_auditevent SET action = 'x'", "DELETE FROM tenants_auditevent"):
        with (
            pytest.raises(Exception, match="append-only"),
            transaction.atomic(),
            connection.cursor() as cursor,
        ):
            cursor.execute(sql)
    assert AuditEvent.objects.filter(action="tenant.suspend").count() == 1


@pytest.mark.django_db(transaction=True)  # SET LOCAL lasts to the end of a real transaction
def test_postgresql_lets_only_retentions_own_transaction_delete_audit_rows(acme):
    if connection.vendor != "postgresql":
        pytest.skip("the trigger is PostgreSQL's; SQLite relies on the model guards")
    tenant_suspend(tenant=acme)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL atlas.audit_expiry = 'on'")
        with pytest.raises(Exception, match="append-only"), transaction.atomic():
            cursor.execute("UPDATE tenants_auditevent SET action = 'x'")  # updates: never
        cursor.execute("DELETE FROM tenants_auditevent WHERE action = 'tenant.suspend'")
    assert not AuditEvent.objects.filter(action="tenant.suspend").exists()
    tenant_reactivate(tenant=acme)
    with (
        pytest.raises(Exception, match="append-only"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute("DELETE FROM tenants_auditevent")  # the setting was that transaction's
    assert AuditEvent.objects.filter(action="tenant.reactivate").count() == 1


@pytest.mark.django_db(transaction=True)
def test_audit_record_outside_a_transaction_is_a_programming_error():
    from tenants.services.audit import audit_record

    tenant = Tenant.objects.create(slug="solo", name="Solo")
    with pytest.raises(RuntimeError):
        audit_record(action="x", tenant=tenant)
    assert not AuditEvent.objects.exists()


def test_audit_record_many_writes_each_event_in_one_insert(acme):
    from django.test.utils import CaptureQueriesContext

    from tenants.services.audit import AuditEntry, audit_record_many

    zed = user_create(tenant=acme, external_id="zed")
    entries = [
        AuditEntry(action="memory.write", tenant=acme, subject_user=zed, metadata={"n": n})
        for n in range(5)
    ]
    actor = Actor(type="token", id="3", label="agent")
    with (
        acting_as(actor),
        request_id("req-batch"),
        transaction.atomic(),
        CaptureQueriesContext(connection) as queries,
    ):
        audit_record_many(entries)

    assert sum(q["sql"].startswith('INSERT INTO "tenants_auditevent"') for q in queries) == 1
    events = AuditEvent.objects.filter(action="memory.write").order_by("id")
    assert [e.metadata["n"] for e in events] == [0, 1, 2, 3, 4]
    assert {(e.actor_type, e.actor_id, e.request_id, e.subject_user_id) for e in events} == {
        ("token", "3", "req-batch", zed.pk)
    }


@pytest.mark.django_db(transaction=True)
def test_audit_record_many_outside_a_transaction_is_a_programming_error():
    from tenants.services.audit import AuditEntry, audit_record_many

    tenant = Tenant.objects.create(slug="solo", name="Solo")
    with pytest.raises(RuntimeError):
        audit_record_many([AuditEntry(action="x", tenant=tenant)])
    assert not AuditEvent.objects.exists()
