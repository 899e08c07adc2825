"""Admin workflows over HTTP: onboarding, users and keys, tokens, the read-only audit log."""

import pytest
from django.test import Client
from django.urls import reverse

from tenants.models import AuditEvent, PlatformToken, ScopedKey, Tenant, User
from tenants.services.scoped_keys import scoped_key_provision
from tenants.services.tokens import token_authenticate, token_issue
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db


def onboard(client: Client, **overrides: str):
    data = {
        "slug": "initech",
        "name": "Initech",
        "admin_username": "peter",
        "admin_email": "peter@initech.example",
        "admin_password": PASSWORD,
        "users": "milton\nsamir\n",
        **overrides,
    }
    return client.post(reverse("admin:tenants_tenant_add"), data)


def test_onboarding_is_one_form_with_admin_users_and_keys(es, platform_client):
    response = onboard(platform_client)

    tenant = Tenant.objects.get(slug="initech")
    assert response.status_code == 302
    assert sorted(tenant.users.values_list("external_id", flat=True)) == ["milton", "samir"]
    assert ScopedKey.objects.filter(user__tenant=tenant, status="active").count() == 2
    peter = Client()
    assert peter.login(username="peter", password=PASSWORD)
    assert "milton" in peter.get(reverse("admin:tenants_user_changelist")).content.decode()
    detail = platform_client.get(response.url).content.decode()
    assert "dls (cluster-enforced)" in detail


def test_a_filter_mode_tenant_is_shown_as_weaker(es, platform_client):
    onboard(platform_client, users="", isolation_mode="filter")

    page = platform_client.get(reverse("admin:tenants_tenant_changelist")).content.decode()

    assert Tenant.objects.get(slug="initech").isolation_mode == "filter"
    assert "filter (weaker)" in page


def test_onboarding_with_a_cluster_lets_the_operator_choose_isolation(es, platform_client):
    form = platform_client.get(reverse("admin:tenants_tenant_add")).content.decode()

    assert 'name="isolation_mode"' in form and "Each gets a scoped cluster key." in form
    assert 'id="no-cluster-note"' not in form


def test_without_a_cluster_onboarding_promises_no_keys_and_says_how_to_move(
    no_cluster, platform_client
):
    form = platform_client.get(reverse("admin:tenants_tenant_add")).content.decode()
    response = platform_client.get(onboard(platform_client).url)
    listing = platform_client.get(reverse("admin:tenants_tenant_changelist")).content.decode()

    assert 'name="isolation_mode"' not in form and "scoped cluster key" not in form
    assert "manage.py memory_migrate &lt;slug&gt;" in form
    assert "Onboarded Initech: admin peter, 2 users, isolation filter." in (
        response.content.decode()
    )
    assert "filter (embedded store)" in listing and "filter (weaker)" not in listing
    assert "manage.py memory_migrate initech" in listing


def test_without_a_cluster_the_users_pages_show_no_key_column_or_action(
    no_cluster, alice, acme_client
):
    listing = acme_client.get(reverse("admin:tenants_user_changelist")).content.decode()
    detail = acme_client.get(reverse("admin:tenants_user_change", args=[alice.pk]))

    assert "alice" in listing
    for key_part in ("column-key_status", "column-key_age", "rotate_key", "provision_key"):
        assert key_part not in listing, key_part
    assert detail.status_code == 200 and "Scoped keys" not in detail.content.decode()


def test_with_a_cluster_the_users_pages_show_key_columns_and_actions(es, alice, acme_client):
    listing = acme_client.get(reverse("admin:tenants_user_changelist")).content.decode()

    for key_part in ("column-key_status", "column-key_age", "rotate_key", "provision_key"):
        assert key_part in listing, key_part


@pytest.mark.parametrize(
    ("overrides", "error"),
    [
        ({"slug": "acme"}, "A tenant with this slug already exists."),
        ({"slug": ""}, "This field is required."),
        ({"name": "  "}, "This field is required."),
        ({"admin_username": "root-op"}, "is taken"),
        ({"admin_password": "short"}, "too short"),
        ({"users": "milton\nmilton"}, "Duplicate user ids: milton."),
        ({"users": "no spaces allowed"}, "no spaces allowed"),
    ],
)
def test_onboarding_bad_input_shows_a_form_error_and_writes_nothing(
    no_cluster, acme, platform_client, overrides, error
):
    tenants_before = Tenant.objects.count()

    response = onboard(platform_client, **overrides)

    assert response.status_code == 200
    assert error in response.content.decode()
    assert Tenant.objects.count() == tenants_before
    assert not AuditEvent.objects.filter(action="tenant.onboard").exists()


def test_onboarding_during_a_cluster_outage_says_so_and_writes_nothing(
    es, settings, platform_client
):
    settings.ATLAS_ES_URL = "http://127.0.0.1:9"

    response = onboard(platform_client)

    assert response.status_code == 200
    assert "search cluster" in response.content.decode()
    assert not Tenant.objects.filter(slug="initech").exists()


def test_the_users_list_shows_key_status_with_a_fixed_number_of_queries(
    es, acme, acme_client, django_assert_max_num_queries
):
    for n in range(6):
        user = User.objects.create(tenant=acme, external_id=f"user{n}")
        if n % 2:
            scoped_key_provision(user=user)

    with django_assert_max_num_queries(12):
        page = acme_client.get(reverse("admin:tenants_user_changelist")).content.decode()

    assert page.count("no key") == 0 and "missing" in page and "active" in page


def test_adding_a_user_provisions_their_key(es, acme, acme_client):
    response = acme_client.post(
        reverse("admin:tenants_user_add"),
        {"tenant": acme.pk, "external_id": "newbie", "provision_key": "on"},
    )

    user = User.objects.get(external_id="newbie")
    assert response.status_code == 302
    assert user.current_key() is not None


def test_adding_a_duplicate_or_empty_user_is_refused(acme, alice, acme_client):
    duplicate = acme_client.post(
        reverse("admin:tenants_user_add"), {"tenant": acme.pk, "external_id": "alice"}
    )
    empty = acme_client.post(
        reverse("admin:tenants_user_add"), {"tenant": acme.pk, "external_id": ""}
    )

    assert "already has a user with this id" in duplicate.content.decode()
    assert "This field is required." in empty.content.decode()
    assert User.objects.filter(tenant=acme).count() == 1


def test_the_rotate_action_switches_keys(es, alice, acme_client):
    old = scoped_key_provision(user=alice)

    response = acme_client.post(
        reverse("admin:tenants_user_changelist"),
        {"action": "rotate_key", "_selected_action": [alice.pk]},
        follow=True,
    )

    assert "Rotated keys of: alice." in response.content.decode()
    old.refresh_from_db()
    assert old.status == ScopedKey.Status.INVALIDATED
    assert alice.current_key().rotated_from == old


def test_the_rotate_action_during_an_outage_reports_it_and_keeps_the_old_key(
    es, settings, alice, acme_client
):
    old = scoped_key_provision(user=alice)
    settings.ATLAS_ES_URL = "http://127.0.0.1:9"

    response = acme_client.post(
        reverse("admin:tenants_user_changelist"),
        {"action": "rotate_key", "_selected_action": [alice.pk]},
        follow=True,
    )

    assert "not rotated, nothing changed (a current key stays valid)" in (response.content.decode())
    assert alice.current_key() == old


def test_rotating_a_user_without_a_key_says_there_is_none(es, alice, acme_client):
    response = acme_client.post(
        reverse("admin:tenants_user_changelist"),
        {"action": "rotate_key", "_selected_action": [alice.pk]},
        follow=True,
    )

    page = response.content.decode()
    assert "The user has no active key to rotate: provision one." in page
    assert "old key still valid" not in page


def test_the_operator_form_preselects_the_least_powerful_role(platform_client):
    page = platform_client.get(reverse("admin:tenants_operator_add")).content.decode()
    select = page[page.index('name="role"') : page.index("</select>", page.index('name="role"'))]

    assert '<option value="auditor" selected>' in select
    assert select.index("auditor") < select.index("tenant_admin") < select.index("platform_admin")


def test_operator_accounts_cannot_be_added_bare(platform_client):
    response = platform_client.get("/admin/auth/user/add/")
    listing = platform_client.get("/admin/auth/user/").content.decode()

    assert response.status_code == 403
    assert "add one under Operators" in listing and "/admin/auth/user/add/" not in listing


def test_the_index_groups_pages_by_what_operators_do(platform_client):
    page = platform_client.get(reverse("admin:index")).content.decode()

    captions = ["Tenants and people", "Memory", "Erasure", "Audit", "Agents and knowledge"]
    positions = [page.index(f">{c}</a>") for c in captions]
    assert positions == sorted(positions)
    people = page[positions[0] : positions[1]]
    for name in ("Tenants", "End users", "Operators", "Platform tokens", "Operator accounts"):
        assert f">{name}</a>" in people, name
    assert ">Groups</a>" not in page
    assert page.index(">Forget requests</a>") > positions[2]
    assert page.index(">Audit events</a>") > positions[3]


def test_the_add_form_offers_a_key_only_with_a_cluster(acme, acme_client, settings):
    settings.ATLAS_ES_URL = ""
    without = acme_client.get(reverse("admin:tenants_user_add")).content.decode()
    settings.ATLAS_ES_URL = "http://127.0.0.1:59200"
    with_cluster = acme_client.get(reverse("admin:tenants_user_add")).content.decode()

    def ticked(page: str) -> bool:
        start = page.index('name="provision_key"')
        return "checked" in page[start : page.index(">", start)]

    assert 'name="provision_key"' not in without and ticked(with_cluster)
    # a one-tenant admin finds their tenant chosen already: named, nothing to pick
    assert f'<input type="hidden" name="tenant" value="{acme.pk}"' in without
    assert '<div class="readonly" id="fixed-tenant">Acme</div>' in without
    assert '<select name="tenant"' not in without


def test_a_token_secret_is_shown_exactly_once(acme, alice, acme_client):
    posted = acme_client.post(
        reverse("admin:tenants_platformtoken_add"),
        {"tenant": acme.pk, "user": alice.pk, "name": "alice bot"},
    )
    token = PlatformToken.objects.get(name="alice bot")
    issued_url = reverse("admin:tenants_platformtoken_issued", args=[token.pk])
    response = acme_client.get(posted["Location"])
    reload = acme_client.get(issued_url)

    assert posted.status_code == 302 and posted["Location"] == issued_url  # post-redirect-get
    page = response.content.decode()
    secret = page.split('id="issued-token"')[1].split(">")[1].split("<")[0]
    assert secret.startswith(f"atlas_{token.lookup}_")
    assert 'id="copy-token"' in page
    assert "no-store" in response["Cache-Control"] and "no-store" in reload["Cache-Control"]
    assert token_authenticate(raw=secret) == token
    # A reload shows no secret and issues nothing.
    assert PlatformToken.objects.count() == 1
    assert 'id="secret-gone"' in reload.content.decode()
    for later in (
        reload,
        acme_client.get(reverse("admin:tenants_platformtoken_changelist")),
        acme_client.get(reverse("admin:tenants_platformtoken_change", args=[token.pk])),
    ):
        assert secret not in later.content.decode()
        assert secret.rsplit("_", 1)[1] not in later.content.decode()


def test_a_tokens_issued_page_never_shows_a_secret_it_did_not_just_issue(
    acme, globex, platform_client, acme_client
):
    token = token_issue(tenant=globex, name="globex fleet").token

    url = reverse("admin:tenants_platformtoken_issued", args=[token.pk])

    platform = platform_client.get(url)
    other_tenant = acme_client.get(url)
    missing = platform_client.get(reverse("admin:tenants_platformtoken_issued", args=[99999]))

    assert platform.status_code == 200 and 'id="secret-gone"' in platform.content.decode()
    assert other_tenant.status_code == 404 and missing.status_code == 404


def test_the_token_list_shows_and_filters_rights(acme, alice, acme_client):
    token_issue(tenant=acme, name="plain fleet")
    token_issue(tenant=acme, name="provisioner", allow_provisioning=True)
    token_issue(tenant=acme, name="exporter", allow_export=True)
    token_issue(tenant=acme, user=alice, name="alice bot")
    changelist = reverse("admin:tenants_platformtoken_changelist")

    page = acme_client.get(changelist).content.decode()
    exporters = acme_client.get(changelist + "?right=export").content.decode()
    plain = acme_client.get(changelist + "?right=tenant").content.decode()

    assert "any user&#x27;s memories, provisioning" in page
    assert "any user&#x27;s memories, export" in page
    assert "own user&#x27;s memories, own user&#x27;s export" in page
    assert "whole tenant" not in page
    assert "exporter" in exporters and "provisioner" not in exporters
    assert "plain fleet" in plain and "exporter" not in plain and "alice bot" not in plain


def test_the_token_form_lists_only_the_chosen_tenants_users(
    acme, globex, alice, charlie, platform_client
):
    add = reverse("admin:tenants_platformtoken_add")

    narrowed = platform_client.get(f"{add}?tenant={acme.pk}").content.decode()
    wrong = platform_client.post(
        add, {"tenant": acme.pk, "user": charlie.pk, "name": "mixed up"}
    ).content.decode()

    users = narrowed[
        narrowed.index('name="user"') : narrowed.index("</select>", narrowed.index('name="user"'))
    ]
    assert f'value="{alice.pk}"' in users and f'value="{charlie.pk}"' not in users
    assert f'data-tenant="{acme.pk}"' in users
    assert "Select a valid choice" in wrong
    assert not PlatformToken.objects.filter(name="mixed up").exists()


def test_issuing_a_token_with_bad_input_is_refused(acme, alice, acme_client):
    response = acme_client.post(
        reverse("admin:tenants_platformtoken_add"),
        {"tenant": acme.pk, "user": alice.pk, "name": "x", "expires_at": "2001-01-01 00:00"},
    )

    assert "The expiry must be in the future." in response.content.decode()
    assert not PlatformToken.objects.exists()


def test_the_revoke_action_asks_first_then_revokes(acme, alice, acme_client):
    issued = token_issue(tenant=acme, user=alice, name="bot")
    changelist = reverse("admin:tenants_platformtoken_changelist")
    chosen = {"action": "revoke", "_selected_action": [issued.token.pk]}

    asked = acme_client.post(changelist, chosen)
    issued.token.refresh_from_db()
    assert asked.status_code == 200 and issued.token.revoked_at is None
    page = asked.content.decode()
    assert 'id="action-confirmation"' in page and "cannot be restored" in page and "bot" in page

    acme_client.post(changelist, {**chosen, "confirmed": "yes"})

    issued.token.refresh_from_db()
    assert issued.token.revoked_at is not None


def test_suspending_a_tenant_asks_first(acme, platform_client):
    changelist = reverse("admin:tenants_tenant_changelist")
    chosen = {"action": "suspend", "_selected_action": [acme.pk]}

    asked = platform_client.post(changelist, chosen)
    acme.refresh_from_db()
    assert asked.status_code == 200 and acme.status == "active"
    assert "Every token of these tenants stops working" in asked.content.decode()

    platform_client.post(changelist, {**chosen, "confirmed": "yes"})

    acme.refresh_from_db()
    assert acme.status == "suspended"


def test_the_audit_log_is_read_only_in_the_admin(acme, alice, acme_client, platform_client):
    token_issue(tenant=acme, user=alice, name="bot")
    event = AuditEvent.objects.get(action="token.issue")

    for client in (acme_client, platform_client):
        listing = client.get(
            reverse("admin:tenants_auditevent_changelist"), {"action": "token.issue"}
        )
        assert listing.status_code == 200 and "token.issue" in listing.content.decode()
        assert '<select name="action"' not in listing.content.decode()
        assert client.get(reverse("admin:tenants_auditevent_add")).status_code == 403
        assert (
            client.post(
                reverse("admin:tenants_auditevent_delete", args=[event.pk]), {"post": "yes"}
            ).status_code
            == 403
        )
        client.post(reverse("admin:tenants_auditevent_change", args=[event.pk]), {"action": "x"})
    event.refresh_from_db()
    assert event.action == "token.issue"
    assert AuditEvent.objects.filter(pk=event.pk).exists()


def test_admin_changes_are_attributed_to_the_operator(acme, alice, acme_client):
    acme_client.post(
        reverse("admin:tenants_platformtoken_add"),
        {"tenant": acme.pk, "user": alice.pk, "name": "alice bot"},
        HTTP_X_REQUEST_ID="req-abcdef123",
    )

    event = AuditEvent.objects.get(action="token.issue")
    assert (event.actor_type, event.actor_label, event.request_id) == (
        "operator",
        "acme-admin",
        "req-abcdef123",
    )
