from datetime import timedelta

import pytest
from django.utils import timezone

from atlas_platform.exceptions import AuthenticationFailed, NotFound, ValidationError
from tenants.models import AuditEvent, PlatformToken
from tenants.selectors import user_for_token
from tenants.services.tokens import token_authenticate, token_issue, token_revoke

pytestmark = pytest.mark.django_db


def test_it_shows_the_secret_once_and_stores_only_a_keyed_hash(alice):
    issued = token_issue(tenant=alice.tenant, user=alice, name="support bot")

    row = PlatformToken.objects.get(pk=issued.token.pk)
    assert issued.secret.startswith(f"atlas_{row.lookup}_")
    assert issued.secret not in row.secret_hash
    assert issued.secret.split("_")[-1] not in str(PlatformToken.objects.values().get(pk=row.pk))
    assert len(row.secret_hash) == 64
    assert token_authenticate(raw=issued.secret) == row


def test_it_refuses_a_token_whose_secret_part_is_wrong(alice):
    issued = token_issue(tenant=alice.tenant, user=alice, name="bot")
    tampered = issued.secret[:-4] + ("AAAA" if not issued.secret.endswith("AAAA") else "BBBB")

    with pytest.raises(AuthenticationFailed) as exc:
        token_authenticate(raw=tampered)
    assert exc.value.code == "token_invalid"


@pytest.mark.parametrize("raw", ["", "nope", "Bearer x", "atlas_short_x", "atlas_" + "a" * 60])
def test_it_refuses_a_malformed_token(db, raw):
    with pytest.raises(AuthenticationFailed) as exc:
        token_authenticate(raw=raw)
    assert exc.value.code == "token_malformed"


def test_it_refuses_a_revoked_token(alice):
    issued = token_issue(tenant=alice.tenant, user=alice, name="bot")
    token_revoke(token=issued.token)

    with pytest.raises(AuthenticationFailed) as exc:
        token_authenticate(raw=issued.secret)
    assert exc.value.code == "token_revoked"


def test_it_refuses_an_expired_token(alice):
    issued = token_issue(
        tenant=alice.tenant, user=alice, name="bot", expires_at=timezone.now() + timedelta(hours=1)
    )
    PlatformToken.objects.filter(pk=issued.token.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )

    with pytest.raises(AuthenticationFailed) as exc:
        token_authenticate(raw=issued.secret)
    assert exc.value.code == "token_expired"


def test_it_refuses_tokens_of_a_suspended_tenant(alice):
    from tenants.services.tenants import tenant_suspend

    issued = token_issue(tenant=alice.tenant, user=alice, name="bot")
    tenant_suspend(tenant=alice.tenant)

    with pytest.raises(AuthenticationFailed) as exc:
        token_authenticate(raw=issued.secret)
    assert exc.value.code == "tenant_suspended"


def test_it_records_last_use(alice):
    issued = token_issue(tenant=alice.tenant, user=alice, name="bot")
    assert issued.token.last_used_at is None

    token_authenticate(raw=issued.secret)

    assert PlatformToken.objects.get(pk=issued.token.pk).last_used_at is not None


def test_it_rejects_a_token_from_another_tenant(alice, charlie):
    tenant_token = token_issue(tenant=alice.tenant, name="acme fleet").token

    with pytest.raises(NotFound):
        user_for_token(token=tenant_token, external_id="charlie")
    assert user_for_token(token=tenant_token, external_id="alice") == alice


def test_a_user_token_may_name_only_its_own_user(alice, bob):
    alice_token = token_issue(tenant=alice.tenant, user=alice, name="alice bot").token

    assert user_for_token(token=alice_token, external_id="alice") == alice
    with pytest.raises(NotFound):
        user_for_token(token=alice_token, external_id="bob")
    with pytest.raises(NotFound):
        user_for_token(token=alice_token, external_id="nobody")


def test_it_refuses_to_issue_for_a_user_of_another_tenant_and_writes_nothing(alice, charlie):
    with pytest.raises(ValidationError):
        token_issue(tenant=alice.tenant, user=charlie, name="cross")
    with pytest.raises(ValidationError):
        token_issue(tenant=alice.tenant, user=alice, name="   ")
    with pytest.raises(ValidationError):
        token_issue(tenant=alice.tenant, name="old", expires_at=timezone.now() - timedelta(days=1))

    assert PlatformToken.objects.count() == 0
    assert AuditEvent.objects.filter(action="token.issue").count() == 0
