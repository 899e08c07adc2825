"""The served ASGI app: MCP paths go to the MCP server, everything else to Django."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from atlas_platform.mcp.app import mcp_route
from tenants.models import AuditEvent, Tenant, User
from tests.atlas_platform.mcp.conftest import (
    issue,
    mcp_session,
    payload,
    recalls_meet_in_pairs,
    run,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/mcp", (True, None)),
        ("/mcp/", (True, None)),
        ("/api/atlas/mcp/alice", (True, "alice")),
        ("/api/atlas/mcp/alice/", (True, "alice")),
        ("/mcp/extra", (False, None)),
        ("/api/atlas/mcp/", (False, None)),
        ("/api/atlas/mcp/a/b", (False, None)),
        ("/admin/", (False, None)),
    ],
)
def test_it_routes_only_the_mcp_paths_to_mcp(path: str, expected: tuple[bool, Any]) -> None:
    assert mcp_route(path) == expected


def test_django_still_serves_the_admin_its_static_files_and_health(atlas_server: str) -> None:
    login = httpx2.get(f"{atlas_server}/admin/login/", timeout=30)
    css = httpx2.get(f"{atlas_server}/static/admin/css/base.css", timeout=30)
    health = httpx2.get(f"{atlas_server}/healthz", timeout=30)

    assert login.status_code == 200 and "/static/admin/css/base.css" in login.text
    assert css.status_code == 200 and css.headers["content-type"].startswith("text/css")
    assert health.json() == {"status": "ok"}


def test_rest_requests_are_served_in_parallel(
    atlas_server: str, acme: Tenant, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Django runs on a pool of threads: two recalls that wait for each other both finish."""
    from concurrent.futures import ThreadPoolExecutor

    from memory.api import views

    recalls_meet_in_pairs(monkeypatch, views)
    token = issue(acme, alice)

    def recall(_: int) -> httpx2.Response:
        return httpx2.post(
            f"{atlas_server}/api/v1/users/{alice.external_id}/recall",
            json={"query": "rowing"},
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )

    with ThreadPoolExecutor(2) as pool:
        answers = list(pool.map(recall, range(2)))
    assert [a.status_code for a in answers] == [200, 200], [a.text for a in answers]


def test_a_chunked_or_oversized_rest_body_is_refused_with_the_error_shape(
    atlas_server: str, acme: Tenant, alice: User, settings: Any
) -> None:
    url = f"{atlas_server}/api/v1/users/{alice.external_id}/recall"
    headers = {"Authorization": f"Bearer {issue(acme, alice)}"}

    def chunks() -> Any:  # a generator body goes out chunked, without a Content-Length
        yield b'{"query": "rowing"}'

    chunked = httpx2.post(url, content=chunks(), headers=headers, timeout=30)
    assert chunked.status_code == 411
    assert chunked.json()["error"]["code"] == "length_required"
    assert "Content-Length" in chunked.json()["error"]["message"]

    settings.ATLAS_MAX_REQUEST_BYTES = 64
    big = httpx2.post(url, json={"query": "rowing " * 20}, headers=headers, timeout=30)
    assert big.status_code == 413
    assert big.json()["error"]["code"] == "request_too_large"


def test_the_endpoint_answers_without_a_trailing_slash_and_attributes_the_request(
    atlas_server: str, acme: Tenant, alice: User
) -> None:
    token = issue(acme, alice)

    async def scenario() -> dict[str, Any]:
        async with mcp_session(
            f"{atlas_server}/mcp", token, headers={"X-Request-ID": "agent-req-0001"}
        ) as session:
            return payload(
                await session.call_tool(
                    "write_memory", {"memory_type": "semantic", "text": "Alice rows on Sundays"}
                )
            )

    assert run(scenario)["memory"]["text"] == "Alice rows on Sundays"
    assert AuditEvent.objects.get(action="memory.write").request_id == "agent-req-0001"


def test_before_the_lifespan_starts_the_endpoint_answers_a_json_rpc_503(
    acme: Tenant, alice: User, embedded_store: None
) -> None:
    from starlette.testclient import TestClient

    from atlas_platform.mcp.app import EndpointStarting, platform_app
    from atlas_platform.mcp.server import build_server

    async def django_app(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("an MCP path reached Django")

    token = issue(acme, alice)
    server = build_server(instructions="", tools=[])
    client = TestClient(platform_app(django_app, server))  # no `with`: the lifespan never runs
    response = client.post(
        "/mcp/",
        json={"jsonrpc": "2.0", "id": 9, "method": "tools/list"},
        headers={"Authorization": f"Bearer {token}", "Host": "localhost"},
    )

    assert response.status_code == 503
    body = response.json()
    assert body["id"] == 9 and body["error"]["code"] == -32603
    assert body["error"]["data"]["code"] == "starting"
    assert body["error"]["message"] == EndpointStarting.public_message
