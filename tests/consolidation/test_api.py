"""POST /api/v1/users/{user_id}/consolidate: queue a run (202), same token rules as every
user endpoint, 409 while no model is configured."""

from __future__ import annotations

import pytest

from consolidation.models import ConsolidationRun
from tests.atlas_server.conftest import Api, error_code, tenant_token, user_token
from tests.celery_worker import broker_url, unique_queue

pytestmark = pytest.mark.usefixtures("store")


@pytest.fixture
def api(client) -> Api:
    return Api(client)


@pytest.mark.django_db(transaction=True)  # real commits: the publish runs after the run's
def test_it_queues_a_run_and_answers_202_with_its_id(api, alice, chat, settings):
    broker_url()
    settings.CELERY_TASK_DEFAULT_QUEUE = unique_queue("consolidate-api")  # nobody consumes it
    response = api.call("POST", "users/alice/consolidate", token=user_token(alice))

    assert response.status_code == 202
    run = ConsolidationRun.objects.get(user=alice)
    assert response.json() == {"run_id": run.pk, "status": "queued", "created": True}
    assert run.trigger == "on_demand"


def test_a_second_request_returns_the_queued_run(api, alice, chat):
    token = user_token(alice)
    first = api.call("POST", "users/alice/consolidate", token=token).json()

    second = api.call("POST", "users/alice/consolidate", token=token).json()

    assert second == {**first, "created": False}


def test_a_tenant_token_may_consolidate_any_of_its_users(api, acme, bob, chat):
    response = api.call("POST", "users/bob/consolidate", token=tenant_token(acme))

    assert response.status_code == 202 and ConsolidationRun.objects.get().user == bob


def test_another_tenants_user_is_not_found(api, acme, charlie, chat):
    response = api.call("POST", "users/charlie/consolidate", token=tenant_token(acme))

    assert response.status_code == 404 and error_code(response) == "user_not_found"
    assert not ConsolidationRun.objects.exists()


def test_without_a_model_it_says_consolidation_is_off(api, alice, no_model):
    response = api.call("POST", "users/alice/consolidate", token=user_token(alice))

    assert response.status_code == 409 and error_code(response) == "consolidation_off"
    assert not ConsolidationRun.objects.exists()


def test_the_endpoint_is_in_the_openapi_schema(api):
    schema = api.client.get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()

    operation = schema["paths"]["/api/v1/users/{user_id}/consolidate"]["post"]
    assert operation["operationId"] == "consolidation_request"
    assert {"202", "404", "409"} <= set(operation["responses"])
