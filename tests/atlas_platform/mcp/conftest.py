"""A live Atlas server on loopback (uvicorn in a thread, the platform's ASGI app) and an MCP
client session for it (the official SDK: streamable HTTP client + ClientSession).

The server runs in this process so it sees the test database and the settings overrides; tests
that use it must be ``django_db(transaction=True)``, since the server's thread has its own
database connection and only sees committed rows.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeVar

import anyio
import httpx2
import pytest
import uvicorn
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from memory.services import bookkeeping
from tenants.models import Tenant, User
from tenants.services.tokens import token_issue

T = TypeVar("T")


@pytest.fixture
def embedded_store(settings: Any, tmp_path: Any) -> Iterator[None]:
    settings.ATLAS_MEMORY_BACKEND = "embedded"
    settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")
    settings.ATLAS_ES_URL = ""
    yield
    bookkeeping.drain()


@contextlib.contextmanager
def serving() -> Iterator[str]:
    """The base URL of a live server running ``atlas_server.asgi.application`` (with the
    settings in force now: the embedded store, or the cluster with ``es``)."""
    from atlas_server.asgi import application

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(application, lifespan="on", log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            pytest.fail("The Atlas test server did not start.")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()


@pytest.fixture
def atlas_server(transactional_db: None, embedded_store: None) -> Iterator[str]:
    """The base URL of a live server on the embedded store."""
    with serving() as url:
        yield url


def issue(tenant: Tenant, user: User | None = None, **kwargs: Any) -> str:
    """A fresh bearer token for ``user`` (or, without one, for the whole tenant)."""
    name = f"{tenant.slug}-{user.external_id if user else 'tenant'}-agent"
    return token_issue(tenant=tenant, user=user, name=name, **kwargs).secret


def run(scenario: Callable[[], Awaitable[T]]) -> T:
    """Run an async client scenario from a (sync) Django test."""
    return anyio.run(scenario)


@contextlib.asynccontextmanager
async def mcp_session(
    url: str, token: str, headers: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """An initialized MCP client session against ``url`` with ``token`` (and extra headers)."""
    headers = {**(headers or {}), "Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def payload(result: CallToolResult) -> dict[str, Any]:
    """A tool result's JSON (its structured content, checked against the text)."""
    assert result.structured_content is None  # the JSON is sent once, as text
    (text,) = result.content
    assert text.type == "text"
    data = json.loads(text.text)
    assert isinstance(data, dict)
    return data


def recalls_meet_in_pairs(monkeypatch: pytest.MonkeyPatch, caller: Any) -> None:
    """Make ``caller.memory_recall`` wait until a second recall is inside it too: two recalls
    then finish only if they run at the same time (one after another, the first times out)."""
    from memory.services.recall import memory_recall

    both_inside = threading.Barrier(2, timeout=10)

    def meeting_recall(**kwargs: Any) -> Any:
        both_inside.wait()
        return memory_recall(**kwargs)

    monkeypatch.setattr(caller, "memory_recall", meeting_recall)
