"""REST API fixtures: the embedded store, tokens for the named actors, a JSON caller.

Most API tests run on the embedded backend (``store``); the end-to-end flow also runs on
Elasticsearch in both isolation modes through ``engine`` / ``people`` from tests/memory.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client

from memory.services import bookkeeping
from tenants.models import Tenant, User
from tenants.services.tokens import token_issue
from tests.atlas_platform.mcp.conftest import atlas_server, embedded_store  # noqa: F401 - the served app, live
from tests.memory.conftest import engine, people  # noqa: F401 - shared fixtures


@pytest.fixture(autouse=True)
def _fresh_rate_limits() -> Iterator[None]:
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def store(settings: Any, tmp_path: Any, db: None) -> Iterator[str]:
    """The embedded backend in a throwaway file."""
    settings.ATLAS_MEMORY_BACKEND = "embedded"
    settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")
    yield "embedded"
    bookkeeping.drain()


def user_token(user: User, **kw: Any) -> str:
    return token_issue(tenant=user.tenant, user=user, name=f"{user.external_id} bot", **kw).secret


def tenant_token(tenant: Tenant, **kw: Any) -> str:
    return token_issue(tenant=tenant, name=f"{tenant.slug} fleet", **kw).secret


@pytest.fixture
def alice_token(alice: User) -> str:
    return user_token(alice)


@pytest.fixture
def acme_catalog_token(acme: Tenant) -> str:
    return tenant_token(acme, allow_catalog=True)


class Api:
    """JSON calls through Django's test client: ``api.post(path, body, token=...)``."""

    def __init__(self, client: Client) -> None:
        self.client = client

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str | None = None,
        headers: dict[str, str] | None = None,
        raw: bytes | str | None = None,
    ) -> Any:
        extra = {f"HTTP_{k.upper().replace('-', '_')}": v for k, v in (headers or {}).items()}
        if token:
            extra["HTTP_AUTHORIZATION"] = f"Bearer {token}"
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        kwargs: dict[str, Any] = {"content_type": "application/json"} if data is not None else {}
        if data is not None:
            kwargs["data"] = data
        return getattr(self.client, method.lower())(f"/api/v1/{path}", **kwargs, **extra)

    def get(self, path: str, **kw: Any) -> Any:
        return self.call("GET", path, **kw)

    def post(self, path: str, body: Any = None, **kw: Any) -> Any:
        return self.call("POST", path, body, **kw)

    def put(self, path: str, body: Any = None, **kw: Any) -> Any:
        return self.call("PUT", path, body, **kw)

    def delete(self, path: str, **kw: Any) -> Any:
        return self.call("DELETE", path, **kw)


@pytest.fixture
def api(client: Client) -> Api:
    return Api(client)


def error_code(response: Any) -> str:
    body = response.json()
    assert set(body) == {"error"}, body
    assert body["error"]["message"] and "request_id" in body["error"], body
    return str(body["error"]["code"])
