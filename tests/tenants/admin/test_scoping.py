"""Tenant admins and auditors see and touch only their own tenant, on every admin page."""

import pytest
from django.urls import reverse

from erasure.models import ForgetRequest
from tenants.models import AuditEvent, Operator, PlatformToken, User
from tenants.services.tokens import token_issue
from tenants.services.users import user_create

pytestmark = pytest.mark.django_db

CHANGELISTS = [
    "tenant",
    "user",
    "platformtoken",
    "scopedkey",
    "operator",
    "auditevent",
    "erasure.forgetrequest",
]


@pytest.fixture
def world(acme, globex, alice, charlie, acme_admin, acme_auditor, globex_admin):
    """Both tenants with users, tokens and audit events of their own."""
    token_issue(tenant=globex, user=charlie, name="globex-bot")
    token_issue(tenant=acme, user=alice, name="acme-bot")
    user_create(tenant=globex, external_id="gqx-user")
    user_create(tenant=acme, external_id="amy")
    ForgetRequest.objects.create(
        tenant=globex, user=charlie, user_ref=charlie.memory_id, scope="user"
    )
    ForgetRequest.objects.create(tenant=acme, user=alice, user_ref=alice.memory_id, scope="user")
    return {"acme": acme, "globex": globex}


def changelist(model: str) -> str:
    app, _, name = model.rpartition(".")
    return reverse(f"admin:{app or 'tenants'}_{name}_changelist")


@pytest.mark.parametrize("model", CHANGELISTS)
def test_a_tenant_admin_sees_no_other_tenant_on_any_list_page(world, acme_client, model):
    response = acme_client.get(changelist(model))

    assert response.status_code == 200
    page = response.content.decode()
    for leak in ("Globex", "globex", "charlie", "gqx-user"):
        assert leak not in page


@pytest.mark.parametrize("model", CHANGELISTS)
def test_filtering_to_another_tenant_shows_nothing(world, acme_client, model):
    path = "tenant" if model != "scopedkey" else "user__tenant"
    path = "id" if model == "tenant" else f"{path}__id__exact"

    response = acme_client.get(changelist(model), {path: world["globex"].pk})

    assert "Globex" not in response.content.decode() and "charlie" not in response.content.decode()


@pytest.mark.parametrize(
    "obj",
    [
        lambda w: ("tenant", w["globex"].pk),
        lambda w: ("user", User.objects.get(external_id="charlie").pk),
        lambda w: ("platformtoken", PlatformToken.objects.get(name="globex-bot").pk),
        lambda w: ("operator", Operator.objects.get(account__username="globex-admin").pk),
        lambda w: (
            "auditevent",
            AuditEvent.objects.filter(tenant=w["globex"]).values_list("pk", flat=True)[0],
        ),
    ],
)
def test_another_tenants_object_pages_do_not_open(world, acme_client, obj):
    model, pk = obj(world)

    response = acme_client.get(reverse(f"admin:tenants_{model}_change", args=[pk]))

    assert response.status_code == 302  # Django admin: "doesn't exist", back to the index
    assert "Globex" not in acme_client.get(response.url).content.decode()


def test_actions_on_another_tenants_objects_do_nothing(world, acme_client):
    charlie = User.objects.get(external_id="charlie")
    token = PlatformToken.objects.get(name="globex-bot")

    acme_client.post(changelist("user"), {"action": "disable", "_selected_action": [charlie.pk]})
    acme_client.post(
        changelist("platformtoken"),
        {"action": "revoke", "_selected_action": [token.pk], "confirmed": "yes"},
    )

    charlie.refresh_from_db()
    token.refresh_from_db()
    assert charlie.status == User.Status.ACTIVE
    assert token.revoked_at is None
    assert not AuditEvent.objects.filter(action__in=["user.disable", "token.revoke"]).exists()


def test_add_forms_refuse_another_tenant(world, acme_client):
    charlie = User.objects.get(external_id="charlie")

    user_page = acme_client.post(
        reverse("admin:tenants_user_add"), {"tenant": world["globex"].pk, "external_id": "sneaky"}
    )
    token_page = acme_client.post(
        reverse("admin:tenants_platformtoken_add"),
        {"tenant": world["acme"].pk, "user": charlie.pk, "name": "sneaky"},
    )
    operator_page = acme_client.post(
        reverse("admin:tenants_operator_add"),
        {
            "username": "sneaky",
            "password": "correct-horse-battery-9",
            "role": "tenant_admin",
            "tenant": world["globex"].pk,
        },
    )

    for page in (user_page, token_page, operator_page):
        assert page.status_code == 200
        assert "Select a valid choice" in page.content.decode()
    assert not User.objects.filter(external_id="sneaky").exists()
    assert not PlatformToken.objects.filter(name="sneaky").exists()
    assert not Operator.objects.filter(account__username="sneaky").exists()


def test_a_tenant_admin_cannot_create_a_platform_admin(world, acme_client):
    page = acme_client.post(
        reverse("admin:tenants_operator_add"),
        {"username": "boss", "password": "correct-horse-battery-9", "role": "platform_admin"},
    )

    assert "Select a valid choice" in page.content.decode()
    assert not Operator.objects.filter(account__username="boss").exists()


def test_a_tenant_admin_cannot_onboard_tenants(world, acme_client):
    assert acme_client.get(reverse("admin:tenants_tenant_add")).status_code == 403


def test_an_auditor_sees_their_tenant_without_action_buttons(world, auditor_client):
    page = auditor_client.get(changelist("user")).content.decode()

    assert "alice" in page and "charlie" not in page
    assert 'name="action"' not in page
    assert "addlink" not in page


def test_an_auditor_who_posts_anyway_is_refused(world, auditor_client):
    alice = User.objects.get(external_id="alice")

    add = auditor_client.post(
        reverse("admin:tenants_user_add"), {"tenant": world["acme"].pk, "external_id": "x"}
    )
    auditor_client.post(changelist("user"), {"action": "disable", "_selected_action": [alice.pk]})
    change = auditor_client.post(
        reverse("admin:tenants_tenant_change", args=[world["acme"].pk]), {"name": "Hacked"}
    )

    assert add.status_code == 403 and change.status_code == 403
    alice.refresh_from_db()
    assert alice.status == User.Status.ACTIVE
    assert not User.objects.filter(external_id="x").exists()
    world["acme"].refresh_from_db()
    assert world["acme"].name == "Acme"


def test_the_platform_admin_sees_every_tenant(world, platform_client):
    page = platform_client.get(changelist("user")).content.decode()

    assert "alice" in page and "charlie" in page


def test_a_staff_account_without_an_operator_role_gets_nothing(db, client, django_user_model):
    django_user_model.objects.create_user(
        username="stray", password="correct-horse-battery-9", is_staff=True
    )
    client.login(username="stray", password="correct-horse-battery-9")

    response = client.get(changelist("user"))

    assert response.status_code == 302 and "login" in response.url


@pytest.mark.parametrize(
    ("model", "lookup"),
    [
        ("scopedkey", "encrypted_secret__startswith"),
        ("platformtoken", "secret_hash__startswith"),
        ("platformtoken", "lookup__startswith"),
        ("user", "uid__startswith"),
        ("auditevent", "metadata__icontains"),
        ("erasure.forgetrequest", "memory_ids__icontains"),
    ],
)
def test_a_changelist_accepts_only_its_declared_filters(world, auditor_client, model, lookup):
    """An auditor rebuilt token and key prefixes with ~150 ``__startswith`` requests."""
    response = auditor_client.get(changelist(model), {lookup: "a"})
    assert response.status_code == 400


@pytest.mark.parametrize("model", CHANGELISTS)
def test_every_changelist_keeps_its_declared_filters(world, acme_client, model):
    from tenants.admin.base import ScopedModelAdmin
    from tenants.admin.site import site

    app, _, name = model.rpartition(".")
    admin_page = next(
        a
        for m, a in site._registry.items()
        if m._meta.app_label == (app or "tenants") and m._meta.model_name == name
    )
    assert isinstance(admin_page, ScopedModelAdmin)
    for lookup in admin_page.declared_lookups(None):
        field = lookup.split("__")[0]
        response = acme_client.get(changelist(model), {f"{field}__isnull": "False"})
        assert response.status_code in (200, 302), (model, lookup)
