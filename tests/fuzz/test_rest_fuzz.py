"""REST: any body on any route and method, and any path segment, is answered below 500, and
every 4xx under /api/ in the shared error shape (a property-based suite, bounded examples)."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from hypothesis import given
from hypothesis import strategies as st

from tenants.models import Tenant, User
from tenants.services.tokens import token_issue
from tests.fuzz.conftest import BODY, FUZZ, TEXT, shared_error

pytestmark = pytest.mark.usefixtures("fuzz_store")
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
CONVERTER = re.compile(r"<(?:\w+:)?(\w+)>")


def _routes(patterns: Any, prefix: str = "") -> list[str]:
    found = []
    for item in patterns:
        route = str(item.pattern)
        if isinstance(item, URLResolver):
            found += _routes(item.url_patterns, prefix + route)
        elif isinstance(item, URLPattern):
            found.append(prefix + route)
    return found


def api_routes() -> list[str]:
    """Every /api/v1/ route (``path()`` ones: their converters are filled in by the test)."""
    routes = {r for r in _routes(get_resolver().url_patterns) if r.startswith("api/v1/")}
    return sorted(r for r in routes if not r.startswith("^") and "(?P" not in r)


ROUTES = api_routes()


def fill(route: str, values: dict[str, str]) -> str:
    return "/" + CONVERTER.sub(lambda m: quote(values.get(m.group(1), "x"), safe=""), route)


def check(response: Any) -> None:
    assert response.status_code < 500, (response.status_code, response.content[:300])
    if response.status_code >= 400:
        shared_error(response.content)


@pytest.fixture
def callers(acme: Tenant, alice: User) -> dict[str, str]:
    return {
        "user": token_issue(tenant=acme, user=alice, name="fuzz user").secret,
        "tenant": token_issue(
            tenant=acme, name="fuzz fleet", allow_catalog=True, allow_provisioning=True
        ).secret,
    }


def test_the_routes_are_found() -> None:
    assert len(ROUTES) >= 20 and "api/v1/users/<str:user_id>/turns" in ROUTES


@FUZZ
@given(
    route=st.sampled_from(ROUTES),
    method=st.sampled_from(METHODS),
    body=BODY,
    who=st.sampled_from(["user", "tenant"]),
)
def test_any_body_on_any_route_is_below_500(
    client: Client, callers: dict[str, str], route: str, method: str, body: Any, who: str
) -> None:
    path = fill(route, {"user_id": "alice"})
    response = client.generic(
        method,
        path,
        json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {callers[who]}",
    )
    check(response)


@FUZZ
@given(
    route=st.sampled_from(ROUTES),
    method=st.sampled_from(METHODS),
    segments=st.dictionaries(
        st.sampled_from(
            ["user_id", "memory_id", "entity_id", "task_id", "message_id", "session_id", "name"]
        ),
        TEXT,
    ),
    query=st.dictionaries(
        st.sampled_from(["after", "limit", "type", "since", "q", "k", "created_from", "status"]),
        TEXT,
        max_size=3,
    ),
)
def test_any_path_and_query_is_below_500(
    client: Client,
    callers: dict[str, str],
    route: str,
    method: str,
    segments: dict[str, str],
    query: dict[str, str],
) -> None:
    path = fill(route, {"user_id": "alice", **segments})
    qs = "&".join(f"{quote(k)}={quote(v, safe='')}" for k, v in query.items())
    response = client.generic(
        method,
        f"{path}?{qs}" if qs else path,
        "{}" if method != "GET" else "",
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {callers['tenant']}",
    )
    check(response)


@FUZZ
@given(
    raw=st.one_of(
        st.binary(max_size=200),
        st.text(max_size=200).map(str.encode),
        st.integers(1, 3000).map(lambda n: b'{"text": ' + b"[" * n + b"]" * n + b"}"),
    )
)
def test_any_raw_bytes_as_a_body_are_below_500(
    client: Client, callers: dict[str, str], raw: bytes
) -> None:
    response = client.post(
        "/api/v1/users/alice/memories",
        raw,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {callers['user']}",
    )
    check(response)
