"""An erasure of a user reaches the agents app (``tenants.signals.user_data_erasing``): a whole
user takes every agents row of theirs; an erasure of chosen memories takes the replay ledger
(its stored results can hold the erased text). Through the erasure job itself."""

from __future__ import annotations

from typing import Any

import pytest

from agents.models import Task
from atlas_platform.models import LedgerEntry
from erasure.models import ForgetRequest
from erasure.services import (
    OperatorPrincipal,
    forget_request_approve,
    forget_request_execute,
    forget_request_open,
)
from memory.services.writes import memory_write
from tenants.scoping import scope_for
from tests.agents.conftest import register
from tests.agents.test_purge import agents_rows, everything


@pytest.fixture
def store(settings: Any, tmp_path: Any, db: None) -> None:
    settings.ATLAS_MEMORY_BACKEND = "embedded"
    settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")


def erase(user, admin, capture, **scope) -> ForgetRequest:
    scope_of_admin = scope_for(admin.account)
    assert scope_of_admin is not None
    principal = OperatorPrincipal(admin.account, scope_of_admin)
    request = forget_request_open(
        reason="the subject asked", ticket="DPO-1", user=user, by=principal, **scope
    )
    with capture():
        forget_request_approve(request=request, by=principal)
    done = forget_request_execute(request_id=request.pk)
    assert done is not None and done.status == ForgetRequest.Status.DONE
    return done


def test_erasing_a_whole_user_removes_their_agents_rows(
    store, alice, bob, acme_admin, django_capture_on_commit_callbacks
):
    bobs = register(bob)
    everything(alice, bobs)
    bobs_task = Task.objects.create(user=bob, agent=bobs, title="Bob keeps this")

    done = erase(alice, acme_admin, django_capture_on_commit_callbacks, scope="user")
    assert done.receipt is not None

    assert set(agents_rows(alice).values()) == {0}
    assert not LedgerEntry.objects.filter(user_pk=alice.pk).exists()
    assert done.receipt["other_records_deleted"]["agents.agents"] == 1
    assert done.receipt["other_records_deleted"]["agents.messages"] == 2
    assert Task.objects.filter(pk=bobs_task.pk).exists()


def test_erasing_chosen_memories_removes_only_the_replay_ledger(
    store, alice, bob, acme_admin, django_capture_on_commit_callbacks
):
    everything(alice, register(bob))
    fact = memory_write(user=alice, text="Alice's locker code is 4711", memory_type="semantic")

    done = erase(
        alice, acme_admin, django_capture_on_commit_callbacks, scope="ids", memory_ids=[fact.id]
    )

    assert done.receipt is not None
    rows = agents_rows(alice)
    assert not LedgerEntry.objects.filter(user_pk=alice.pk).exists()
    assert rows["Agent"] == 1 and rows["Task"] == 1  # the rest of her work records stays
    assert done.receipt["idempotency_records_deleted"] == 1  # the operation's entry
    assert done.receipt["other_records_deleted"] == {}
