import pytest
from django.contrib.auth import get_user_model

from atlas_platform.exceptions import ClusterUnavailable, ValidationError
from tenants.models import AuditEvent, Operator, ScopedKey, Tenant, User
from tenants.services.tenants import tenant_onboard, tenant_update

pytestmark = pytest.mark.django_db
GOOD = {"admin_password": "correct-horse-battery-9"}


def nothing_written() -> bool:
    return (
        not Tenant.objects.exists()
        and not User.objects.exists()
        and not Operator.objects.exists()
        and not get_user_model().objects.exists()
        and not AuditEvent.objects.exists()
    )


def test_it_onboards_a_tenant_with_admin_users_and_keys_on_the_cluster(es):
    result = tenant_onboard(
        slug="acme", name="Acme", admin_username="ann", user_external_ids=["alice", "bob"], **GOOD
    )

    assert result.tenant.isolation_mode == Tenant.IsolationMode.DLS
    assert result.tenant.operators.get().role == Operator.Role.TENANT_ADMIN
    assert sorted(u.external_id for u in result.tenant.users.all()) == ["alice", "bob"]
    assert ScopedKey.objects.filter(user__tenant=result.tenant, status="active").count() == 2
    event = AuditEvent.objects.get()
    assert event.action == "tenant.onboard" and event.tenant == result.tenant
    assert event.metadata["users"] == ["alice", "bob"]


def test_without_a_cluster_the_tenant_runs_in_the_weaker_filter_mode(no_cluster, db):
    result = tenant_onboard(
        slug="acme", name="Acme", admin_username="ann", user_external_ids=["alice"], **GOOD
    )

    assert result.tenant.isolation_mode == Tenant.IsolationMode.FILTER
    assert result.tenant.isolation_is_weaker
    assert not ScopedKey.objects.exists()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"slug": "Not A Slug"}, "slug"),
        ({"name": "   "}, "name"),
        ({"admin_username": ""}, "username"),
        ({"admin_password": "123"}, "Password"),
        ({"user_external_ids": ["alice", "alice"]}, "Duplicate"),
        ({"user_external_ids": ["bad id!"]}, "bad id!"),
    ],
)
def test_bad_input_is_refused_with_a_clear_error_and_nothing_written(
    no_cluster, db, kwargs, message
):
    args = {"slug": "acme", "name": "Acme", "admin_username": "ann", **GOOD, **kwargs}

    with pytest.raises(ValidationError) as exc:
        tenant_onboard(**args)

    assert message in exc.value.message
    assert nothing_written()


def test_a_duplicate_slug_is_refused(no_cluster, db):
    tenant_onboard(slug="acme", name="Acme", admin_username="ann", **GOOD)

    with pytest.raises(ValidationError) as exc:
        tenant_onboard(slug="acme", name="Acme 2", admin_username="other", **GOOD)

    assert "slug" in exc.value.message
    assert Tenant.objects.count() == 1 and AuditEvent.objects.count() == 1


def test_a_cluster_failure_midway_writes_nothing(es, settings):
    settings.ATLAS_ES_URL = "http://127.0.0.1:9"

    with pytest.raises(Exception, match="search cluster"):
        tenant_onboard(
            slug="acme", name="Acme", admin_username="ann", user_external_ids=["alice"], **GOOD
        )

    assert nothing_written()


def test_tenant_update_records_what_changed(acme):
    tenant_update(tenant=acme, decay_offset_days=90, name="Acme")

    event = AuditEvent.objects.get()
    assert event.action == "tenant.update"
    assert event.metadata == {"changed": {"decay_offset_days": [365, 90]}}


def test_tenant_update_refuses_fields_that_are_not_tunables(acme):
    with pytest.raises(ValidationError):
        tenant_update(tenant=acme, slug="other")
    with pytest.raises(ValidationError):
        tenant_update(tenant=acme, name="")
    acme.refresh_from_db()
    assert acme.slug == "acme" and acme.name == "Acme"
    assert not AuditEvent.objects.exists()


def test_a_key_that_fails_after_the_first_leaves_no_tenant_and_no_valid_key(es, monkeypatch):
    from atlas_platform.cluster import Cluster

    created: list[str] = []
    invalidated: list[str] = []
    create, invalidate = Cluster.create_api_key, Cluster.invalidate_api_key

    def create_once(self, **kwargs):
        if created:
            raise ClusterUnavailable("the cluster went away")
        key = create(self, **kwargs)
        created.append(key.id)
        return key

    def record_invalidation(self, key_id):
        invalidated.append(key_id)
        return invalidate(self, key_id)

    monkeypatch.setattr(Cluster, "create_api_key", create_once)
    monkeypatch.setattr(Cluster, "invalidate_api_key", record_invalidation)

    with pytest.raises(ClusterUnavailable):
        tenant_onboard(
            slug="acme", name="Acme", admin_username="ann", user_external_ids=["a", "b"], **GOOD
        )

    assert nothing_written() and not ScopedKey.objects.exists()
    assert len(created) == 1 and invalidated == created


@pytest.mark.django_db(transaction=True)
def test_the_cluster_is_called_with_no_transaction_open(es, monkeypatch):
    from django.db import connection

    from atlas_platform.cluster import Cluster

    in_transaction = []
    create = Cluster.create_api_key

    def watched(self, **kwargs):
        in_transaction.append(connection.in_atomic_block)
        return create(self, **kwargs)

    monkeypatch.setattr(Cluster, "create_api_key", watched)

    tenant_onboard(
        slug="acme", name="Acme", admin_username="ann", user_external_ids=["a", "b"], **GOOD
    )

    assert in_transaction == [False, False, False]  # two users' keys, the catalog key
