"""Fuzz the API against its own OpenAPI schema (schemathesis over the WSGI app).

Every operation gets a bounded number of generated requests (valid and invalid) with a
user-scoped bearer token; none may answer 5xx, an undocumented status, a non-JSON body or a
body that breaks the response schema.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.core.serializers.json import DjangoJSONEncoder
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.atlas_server.conftest import user_token

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


def load_schema() -> Any:
    """The schema the API serves, built in-process (no request, no database)."""
    spec = SchemaGenerator().get_schema(request=None, public=True)
    loaded = schemathesis.openapi.from_dict(json.loads(json.dumps(spec, cls=DjangoJSONEncoder)))
    loaded.app = get_wsgi_application()
    return loaded


schema = load_schema()


@pytest.fixture
def bearer(store: str, alice: Any, settings: Any) -> Iterator[dict[str, str]]:
    """Alice's user-scoped token; rate limits out of the way; the test's DB connection kept."""
    settings.ATLAS_RATE_RECALL = settings.ATLAS_RATE_WRITE = settings.ATLAS_RATE_READ = "1000/s"
    settings.ATLAS_RATE_OPERATIONS = "1000/s"
    # As Django's test client does: requests must not close the test's connection.
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    try:
        yield {"Authorization": f"Bearer {user_token(alice)}"}
    finally:
        for signal in (request_started, request_finished):
            signal.connect(close_old_connections)


@pytest.mark.django_db
@schema.parametrize()  # type: ignore[untyped-decorator]
@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_the_api_honours_its_schema(case: Any, bearer: dict[str, str]) -> None:
    if "user_id" in case.path_parameters:
        case.path_parameters["user_id"] = "alice"  # the token's own user: reach the handlers
    case.call_and_validate(headers=bearer, checks=CHECKS)
