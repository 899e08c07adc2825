"""The erasure job on every backend (embedded, Elasticsearch filter and dls): a behaviour that
differs between them is a bug. On dls the job still sees everything (writer credential), and
deleting the user record invalidates the user's scoped key on the cluster."""

from __future__ import annotations

import pytest

from erasure.models import ForgetRequest
from erasure.services import forget_request_approve, forget_request_open
from memory.services.common import backend
from memory.services.scoping import user_read_scope
from memory.services.writes import memory_turn_record, memory_write
from tenants.models import ScopedKey, User
from tests.erasure.test_services import op, run


@pytest.fixture
def admin(people):
    from tenants.models import Operator
    from tenants.services.users import operator_create

    return operator_create(
        username="erasure-admin",
        password="correct-horse-battery-9",
        role=Operator.Role.TENANT_ADMIN,
        tenant=people.acme,
    )


def approve(request, admin, capture) -> None:
    with capture():
        forget_request_approve(request=request, by=op(admin))


def test_a_query_with_supporting_episodes_erases_the_same_on_every_backend(
    people, admin, django_capture_on_commit_callbacks
):
    alice, bob = people.alice, people.bob
    said = memory_turn_record(user=alice, text="My new flat is on Baker Street").episode
    fact = memory_write(
        user=alice,
        text="Alice lives on baker   street",
        memory_type="semantic",
        supporting_episode_ids=[said.id],
    )
    newer = memory_write(
        user=alice, text="Alice lives on Baker Street, no 221b", memory_type="semantic",
        supersedes=[fact.id],
    )  # fmt: skip
    kept = memory_write(user=alice, text="Alice likes tea", memory_type="semantic")
    bobs = memory_write(user=bob, text="Bob lives on Baker Street too", memory_type="semantic")
    request = forget_request_open(
        reason="the subject asked",
        ticket="DPO-1",
        user=alice,
        scope="query",
        query="Baker Street",
        include_supporting_episodes=True,
        by=op(admin),
    )
    approve(request, admin, django_capture_on_commit_callbacks)

    done = run(request)

    assert done.status == "done", done.reason
    assert sorted(done.memory_ids) == sorted([said.id, fact.id, newer.id])
    store, scope = backend(), user_read_scope(alice)
    assert [d.id for d in store.get_many(scope, [said.id, fact.id, newer.id, kept.id])] == [kept.id]
    assert store.get(user_read_scope(bob), bobs.id) is not None
    assert done.receipt["total_deleted"] == 3 and done.query == ""


def test_erasing_a_user_record_leaves_nothing_and_invalidates_its_key(
    people, admin, django_capture_on_commit_callbacks
):
    alice = people.alice
    for n in range(4):
        memory_turn_record(user=alice, text=f"turn number {n}")
    memory_write(user=alice, text="a playbook", memory_type="procedural", name="pb")
    bobs = memory_write(user=people.bob, text="Bob's own fact", memory_type="semantic")
    key = alice.current_key()
    request = forget_request_open(
        reason="the subject asked",
        ticket="DPO-1",
        user=alice,
        scope="user",
        delete_user_record=True,
        by=op(admin),
    )
    approve(request, admin, django_capture_on_commit_callbacks)

    done = run(request)

    assert done.status == "done", done.reason
    deleted = {k: v["deleted"] for k, v in done.receipt["indices"].items()}
    assert deleted["episodic"] == 4 and deleted["procedural"] == 1
    assert not User.objects.filter(pk=alice.pk).exists()
    if people.kind == "es-dls":
        assert key is not None and not ScopedKey.objects.filter(pk=key.pk).exists()
        assert done.receipt["user_record_deleted"] is True
    assert ForgetRequest.objects.get(pk=request.pk).user is None
    assert backend().get(user_read_scope(people.bob), bobs.id) is not None


def test_an_erasure_reaches_archived_facts_and_the_receipt_says_so(
    people, admin, django_capture_on_commit_callbacks
):
    from datetime import timedelta

    from django.utils import timezone

    from memory.services.archive import memory_archive_superseded, memory_archived_count

    alice = people.alice
    old = memory_write(user=alice, text="Alice lives on Baker Street", memory_type="semantic")
    newer = memory_write(
        user=alice, text="Alice lives on Baker Street, no 221b", memory_type="semantic",
        supersedes=[old.id],
    )  # fmt: skip
    ids = {"tenant_id": alice.tenant.memory_id, "user_id": alice.memory_id}
    moved = memory_archive_superseded(**ids, before=timezone.now() + timedelta(seconds=1))
    assert moved == 1 and memory_archived_count(**ids) == 1
    request = forget_request_open(
        reason="the subject asked",
        ticket="DPO-2",
        user=alice,
        scope="query",
        query="Baker Street",
        by=op(admin),
    )
    approve(request, admin, django_capture_on_commit_callbacks)

    done = run(request)

    assert done.status == "done", done.reason
    assert sorted(done.memory_ids) == sorted([old.id, newer.id])
    assert backend().get_many(user_read_scope(alice), [old.id, newer.id]) == []
    assert memory_archived_count(**ids) == 0
    assert done.receipt["indices"]["semantic"]["deleted"] == 2
    assert done.receipt["archive"] == {
        "included": True,
        "archived_found_at_start": 1,
        "remaining": 0,
    }
