"""The upgrade to the one exactly-once ledger: memory's 0004 and agents' 0004 copy the
``Idempotency-Key`` records and the applied operations into ``atlas_platform.LedgerEntry`` and
drop their tables; a retry after the upgrade still replays (or takes a dead claim over under
the same seed), never applies the write again. And back."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.utils import timezone

from agents.services.agents import agent_register
from agents.services.operations import Operation, operations_apply
from atlas_platform.ledger import ledger_claim
from atlas_platform.models import LedgerEntry
from tenants.models import User
from tenants.services.tokens import token_issue

BEFORE = [("memory", "0003_write_intents"), ("agents", "0003_applied_operation_agent")]
AFTER = [
    ("memory", "0004_idempotency_records_to_ledger"),
    ("agents", "0004_applied_operations_to_ledger"),
]
PATH = "/api/v1/users/alice/memories"
BODY = json.dumps({"text": "Alice's locker is 12", "memory_type": "semantic"}).encode()


def migrate(targets: list[tuple[str, str]]) -> Any:
    """memory and agents migrated to ``targets``; the models as they were then, with every
    other app's as the database has them now."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    named = {app for app, _ in targets}
    others = [n for n in executor.loader.graph.leaf_nodes() if n[0] not in named]
    return executor.loader.project_state([*others, *targets]).apps


@pytest.fixture
def upgraded_later() -> Iterator[None]:
    yield
    # Whatever the test did, the next one finds the schema as it is now: every app at its
    # latest migration (going back to BEFORE also unapplied what came after AFTER, in memory
    # and in the apps whose migrations depend on it).
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())


def fail(**kwargs: Any) -> dict[str, Any]:
    raise AssertionError("a replay must not apply the operation again")


@pytest.mark.django_db(transaction=True)
def test_an_upgrade_keeps_every_key_and_a_retry_replays(alice: User, upgraded_later: None):
    issued = token_issue(tenant=alice.tenant, user=alice, name="alice bot")
    agent = agent_register(user=alice, slug="claude-code").agent
    other = agent_register(user=alice, slug="codex").agent
    token, now = issued.token, timezone.now()
    old = migrate(BEFORE)
    Record = old.get_model("memory", "IdempotencyRecord")
    Applied = old.get_model("agents", "AppliedOperation")
    line, digest = f"POST {PATH}", hashlib.sha256(BODY).hexdigest()
    first = {"id": "0f" * 16, "text": "Alice's locker is 12"}
    Record.objects.create(
        token_id=token.pk,
        key="done",
        request_line=line,
        request_hash=digest,
        status_code=201,
        response_body=first,
    )
    crashed = Record.objects.create(
        token_id=token.pk,
        key="crashed",
        request_line=line,
        request_hash=digest,
        lease_until=now - timedelta(seconds=1),
    )
    common = {"user_id": alice.pk, "agent_id": agent.pk}
    Applied.objects.create(
        operation_id="op-done",
        kind="task.create",
        request_hash="h1",
        state="done",
        status_code=201,
        result={"task": 7},
        **common,
    )
    Applied.objects.create(
        operation_id="op-stuck",
        kind="memory.write",
        request_hash="h2",
        state="pending",
        created_at=now - timedelta(hours=1),
        **common,
    )

    migrate(AFTER)

    assert LedgerEntry.objects.count() == 4
    replay = Client().post(
        PATH,
        BODY,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {issued.secret}",
        HTTP_IDEMPOTENCY_KEY="done",
    )
    assert replay.status_code == 201 and replay.json() == first
    assert replay["Idempotent-Replayed"] == "true"
    # The crashed claim is taken over under the seed its first attempt's memory ids came from.
    taken = ledger_claim(
        scope=f"token:{token.pk}",
        key="crashed",
        request=line,
        request_hash=digest,
        seed="a new one",
        ttl=timedelta(hours=24),
        tenant_id=alice.tenant_id,
        user_id=alice.pk,
    )
    assert isinstance(taken, LedgerEntry)
    assert taken.seed == f"idem:{alice.tenant_id}:{token.pk}:{crashed.pk}"
    done = Operation(id="op-done", kind="task.create", request_hash="h1", run=fail)
    [again] = operations_apply(user=alice, operations=[done], agent=agent)
    [theirs] = operations_apply(user=alice, operations=[done], agent=other)
    assert (again.status, again.status_code, again.result) == ("duplicate", 201, {"task": 7})
    assert (theirs.status, theirs.status_code) == ("conflict", 409)
    stuck = LedgerEntry.objects.get(key="op-stuck")
    assert stuck.status_code is None and stuck.lease_until is not None
    assert stuck.seed == f"op:{alice.tenant_id}:{alice.pk}:op-stuck:h2"
    assert stuck.owner == f"agent:{agent.pk}"

    back = migrate(BEFORE)

    assert back.get_model("memory", "IdempotencyRecord").objects.count() == 2
    ops = back.get_model("agents", "AppliedOperation").objects
    assert ops.get(operation_id="op-done").result == {"task": 7}
    assert ops.get(operation_id="op-stuck").state == "pending"
    assert not LedgerEntry.objects.exists()
