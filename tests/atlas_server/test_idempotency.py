"""``Idempotency-Key`` on writes: a retry replays the first response and writes nothing."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from unittest import mock

import pytest
from django.utils import timezone

from atlas_platform.models import LedgerEntry
from memory.selectors import memory_page
from memory.services.common import backend
from memory.services.scoping import user_read_scope
from tenants.models import AuditEvent, PlatformToken
from tests.atlas_server.conftest import error_code, tenant_token

pytestmark = pytest.mark.usefixtures("store")
FACT = {"text": "Alice's badge number is 4471", "memory_type": "semantic"}


def documents(user):
    return backend().scan(user_read_scope(user), memory_types=("semantic", "episodic"))


def test_a_retried_write_returns_the_same_memory_and_stores_one(api, alice, alice_token):
    key = {"Idempotency-Key": "write-1"}

    first = api.post("users/alice/memories", FACT, token=alice_token, headers=key)
    retry = api.post("users/alice/memories", FACT, token=alice_token, headers=key)

    assert first.status_code == retry.status_code == 201
    assert retry.json() == first.json()
    assert retry["Idempotent-Replayed"] == "true" and "Idempotent-Replayed" not in first
    assert [d.id for d in documents(alice)] == [first.json()["id"]]
    assert AuditEvent.objects.filter(action="memory.write").count() == 1


def test_a_retried_turn_stores_one_episode(api, alice, alice_token):
    key = {"Idempotency-Key": "turn-1"}
    body = {"text": "My flight is BA117"}

    first = api.post("users/alice/turns", body, token=alice_token, headers=key).json()
    retry = api.post("users/alice/turns", body, token=alice_token, headers=key).json()

    assert retry["episode"]["id"] == first["episode"]["id"]
    assert len(documents(alice)) == 1


def test_a_retried_forget_and_outcome_replay(api, alice, alice_token):
    fact = api.post("users/alice/memories", FACT, token=alice_token).json()
    key = {"Idempotency-Key": "forget-1"}

    gone = api.delete(f"users/alice/memories/{fact['id']}", token=alice_token, headers=key)
    again = api.delete(f"users/alice/memories/{fact['id']}", token=alice_token, headers=key)

    assert gone.status_code == again.status_code == 204
    assert again["Idempotent-Replayed"] == "true"


def test_a_retried_catalog_put_replays(api, acme):
    token = tenant_token(acme, allow_catalog=True)
    key = {"Idempotency-Key": "cat-1"}

    api.put("catalog/faq-1", {"text": "Opening hours"}, token=token, headers=key)
    retry = api.put("catalog/faq-1", {"text": "Opening hours"}, token=token, headers=key)

    assert retry.status_code == 200 and retry["Idempotent-Replayed"] == "true"
    assert AuditEvent.objects.filter(action="catalog.import").count() == 1


def test_the_same_key_with_another_body_is_refused(api, alice, alice_token):
    key = {"Idempotency-Key": "write-2"}
    api.post("users/alice/memories", FACT, token=alice_token, headers=key)

    other = api.post(
        "users/alice/memories", {**FACT, "text": "Something else"}, token=alice_token, headers=key
    )
    elsewhere = api.post("users/alice/turns", {"text": "hi"}, token=alice_token, headers=key)

    assert other.status_code == 422 and error_code(other) == "idempotency_key_reused"
    assert elsewhere.status_code == 422
    assert len(documents(alice)) == 1


def test_a_duplicate_while_the_first_runs_gets_409(api, alice, alice_token):
    token = PlatformToken.objects.get()
    now = timezone.now()
    LedgerEntry.objects.create(
        scope=f"token:{token.pk}",
        key="busy",
        tenant_pk=token.tenant_id,
        user_pk=token.user_id,
        request="POST /api/v1/users/alice/memories",
        request_hash=hashlib.sha256(b'{"a": 1}').hexdigest(),
        seed="idem:busy",
        lease_until=now + timedelta(seconds=30),
        expires_at=now + timedelta(hours=24),
    )

    response = api.post(
        "users/alice/memories",
        raw='{"a": 1}',
        token=alice_token,
        headers={"Idempotency-Key": "busy"},
    )

    assert response.status_code == 409 and error_code(response) == "idempotency_in_progress"


def test_a_failed_write_releases_its_key(api, alice, alice_token):
    key = {"Idempotency-Key": "write-3"}

    bad = api.post("users/alice/memories", {"text": "x"}, token=alice_token, headers=key)
    good = api.post("users/alice/memories", FACT, token=alice_token, headers=key)

    assert bad.status_code == 400 and good.status_code == 201
    assert "Idempotent-Replayed" not in good


def test_keys_are_per_token_and_expire_after_a_day(api, alice, alice_token):
    key = {"Idempotency-Key": "write-4"}
    first = api.post("users/alice/memories", FACT, token=alice_token, headers=key).json()
    other_token = tenant_token(alice.tenant)

    elsewhere = api.post("users/alice/memories", FACT, token=other_token, headers=key).json()
    LedgerEntry.objects.filter(user_pk=alice.pk).update(expires_at=timezone.now())
    later = api.post("users/alice/memories", FACT, token=alice_token, headers=key)

    assert elsewhere["id"] != first["id"]
    assert later.status_code == 201 and "Idempotent-Replayed" not in later
    assert later.json()["id"] != first["id"]


def test_recall_ignores_the_key(api, alice, alice_token):
    response = api.post(
        "users/alice/recall", {"query": "x"}, token=alice_token, headers={"Idempotency-Key": "r"}
    )

    assert response.status_code == 200 and not LedgerEntry.objects.exists()


@pytest.mark.parametrize("key", ["", "x" * 256, "naïve"])
def test_a_malformed_key_is_refused(api, alice, alice_token, key):
    response = api.post(
        "users/alice/memories", FACT, token=alice_token, headers={"Idempotency-Key": key}
    )

    assert response.status_code == 400 and error_code(response) == "bad_idempotency_key"


def test_the_hourly_purge_deletes_only_expired_records(api, alice, alice_token, settings):
    from atlas_platform.tasks import ledger_purge_task

    for n in (1, 2):
        api.post(
            "users/alice/memories", FACT, token=alice_token, headers={"Idempotency-Key": f"p{n}"}
        )
    [first] = LedgerEntry.objects.filter(key="p1")
    assert first.expires_at - first.created_at == timedelta(hours=24)

    with mock.patch(
        "django.utils.timezone.now", return_value=first.created_at + timedelta(hours=24)
    ):
        purged = ledger_purge_task.apply().get()

    assert purged == 1
    assert list(LedgerEntry.objects.values_list("key", flat=True)) == ["p2"]
    assert settings.CELERY_BEAT_SCHEDULE["ledger-purge"]["task"] == ledger_purge_task.name


def test_a_replay_never_returns_a_forgotten_memorys_text(api, alice, alice_token, acme):
    """Forget redacts the stored replies that hold the memory (its own write, a recall that
    quoted it, a tenant token's request on the user's path): a replay answers 410 without the
    text, and the forgotten write is not run again."""
    secret = "my locker code is 4417"
    body = {"text": secret, "memory_type": "semantic"}
    write = api.post(
        "users/alice/memories", body, token=alice_token, headers={"Idempotency-Key": "w"}
    )
    memory_id = write.json()["id"]
    fleet = tenant_token(acme)
    other = api.post(
        "users/alice/memories",
        {"text": "likes tea", "memory_type": "semantic"},
        token=fleet,
        headers={"Idempotency-Key": "w2"},
    )
    assert write.status_code == 201 and other.status_code == 201

    assert api.delete(f"users/alice/memories/{memory_id}", token=alice_token).status_code == 204
    replay = api.post(
        "users/alice/memories", body, token=alice_token, headers={"Idempotency-Key": "w"}
    )
    kept = api.post(
        "users/alice/memories",
        {"text": "likes tea", "memory_type": "semantic"},
        token=fleet,
        headers={"Idempotency-Key": "w2"},
    )

    assert replay.status_code == 410, replay.content
    assert secret not in replay.content.decode() and memory_id not in replay.content.decode()
    assert error_code(replay) == "forgotten"
    assert kept.status_code == 201 and kept.json()["id"] == other.json()["id"]
    texts = [d.text for d in memory_page(user=alice).documents]
    assert secret not in texts  # not written again by the replay
