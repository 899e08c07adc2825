"""Dependent operations in one batch: ``{"$ref": id, "field": name}`` arguments resolved from
the batch's earlier answers or the ledger (``agents.api.refs``), and the operations endpoint's
own rate-limit bucket."""

from __future__ import annotations

from unittest import mock

import pytest
from django.core.cache import cache

from agents.models import Task
from atlas_platform.exceptions import Unavailable
from tests.agents.conftest import bound_token
from tests.agents.test_operations import batch, op, statuses

pytestmark = pytest.mark.django_db


def ref(op_id, field):
    return {"$ref": op_id, "field": field}


def start(create_id, op_id):
    return op(
        op_id,
        "task.transition",
        task_id=ref(create_id, "id"),
        expected_version=ref(create_id, "version"),
        to_state="in_progress",
    )


def test_a_create_and_its_transition_travel_in_one_batch(api, alice_bound):
    results = batch(
        api, alice_bound, op("c-1", "task.create", title="Ship it"), start("c-1", "t-1")
    )

    assert statuses(results) == [("c-1", "applied", 200), ("t-1", "applied", 200)]
    assert list(Task.objects.values_list("title", "state", "version")) == [
        ("Ship it", "in_progress", 2)
    ]


def test_a_replay_answers_both_as_duplicates(api, alice_bound):
    operations = [op("c-1", "task.create", title="Ship it"), start("c-1", "t-1")]
    batch(api, alice_bound, *operations)

    again = batch(api, alice_bound, *operations)

    assert [r["status"] for r in again] == ["duplicate", "duplicate"]
    assert Task.objects.get().version == 2


def test_a_reference_resolves_from_an_earlier_batch_and_matches_the_clients_own_resolution(
    api, alice_bound
):
    created = batch(api, alice_bound, op("c-1", "task.create", title="Ship it"))[0]["result"]
    by_ref = batch(api, alice_bound, start("c-1", "t-1"))[0]

    resolved = op(
        "t-1",
        "task.transition",
        task_id=created["id"],
        expected_version=created["version"],
        to_state="in_progress",
    )
    replayed = batch(api, alice_bound, resolved)[0]

    assert by_ref["status"] == "applied"
    assert replayed["status"] == "duplicate"  # one operation, however the reference was sent


def test_a_reference_to_a_refused_operation_is_rejected_and_the_rest_applies(api, alice_bound):
    results = batch(
        api,
        alice_bound,
        op("c-1", "task.create", title=""),  # refused: a title is required
        start("c-1", "t-1"),
        op("c-2", "task.create", title="Still applied"),
    )

    assert [r["status"] for r in results] == ["rejected", "rejected", "applied"]
    assert results[1]["error"]["code"] == "dependency_failed"
    assert list(Task.objects.values_list("title", flat=True)) == ["Still applied"]


def test_a_reference_to_nothing_known_is_rejected(api, alice_bound):
    result = batch(api, alice_bound, start("never-sent", "t-1"))[0]

    assert (result["status"], result["status_code"]) == ("rejected", 422)
    assert result["error"]["code"] == "unknown_reference"


def test_a_reference_to_an_operation_to_retry_is_retried_too(api, alice_bound):
    down = Unavailable("The store is down.")
    with (
        mock.patch("agents.services.tasks.task_create", side_effect=down),
        mock.patch("agents.api.operations.task_create", side_effect=down),
    ):
        results = batch(
            api, alice_bound, op("c-1", "task.create", title="Ship it"), start("c-1", "t-1")
        )

    assert [r["status"] for r in results] == ["retry", "retry"]
    assert results[1]["error"]["code"] == "dependency_pending"
    again = batch(api, alice_bound, op("c-1", "task.create", title="Ship it"), start("c-1", "t-1"))
    assert [r["status"] for r in again] == ["applied", "applied"]


def test_operations_batches_have_their_own_rate_limit(api, alice_bound, settings):
    settings.ATLAS_RATE_OPERATIONS = "2/min"
    cache.clear()
    for n in range(2):
        batch(api, alice_bound, op(f"c-{n}", "task.create", title=f"Task {n}"))

    throttled = api.post(
        "users/alice/operations", {"operations": [op("c-9", "task.create", title="x")]},
        token=alice_bound,
    )  # fmt: skip
    heartbeat = api.post("users/alice/heartbeat", {"machine_key": "m-1"}, token=alice_bound)

    assert throttled.status_code == 429 and throttled["Retry-After"]
    assert heartbeat.status_code == 200  # interactive writes keep their own budget


def test_a_reference_to_another_agents_operation_is_unknown(api, alice_bound, alice_codex):
    batch(api, alice_bound, op("c-1", "task.create", title="Private to claude-code"))

    [result] = batch(api, bound_token(alice_codex), start("c-1", "t-1"))

    assert result["status"] == "rejected" and result["error"]["code"] == "unknown_reference"
    assert Task.objects.get().state == "created"
