"""Bearer-token auth on every MCP request: refusals come back as HTTP errors in the shared shape,
and no tool runs for a refused request."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx2
import pytest
from django.utils import timezone

from tenants.models import AuditEvent, PlatformToken, Tenant, User
from tenants.services.tokens import token_revoke
from tests.atlas_platform.mcp.conftest import issue, mcp_session, payload, run

pytestmark = pytest.mark.django_db(transaction=True)

TOOL_CALLS = {
    "recall_memory": {"query": "anything"},
    "write_memory": {"memory_type": "semantic", "text": "Refused requests write nothing"},
    "forget_memory": {"memory_id": "0" * 32},
    "record_turn": {"text": "Refused requests record nothing"},
    "memory_history": {"memory_id": "0" * 32},
    "record_reply": {"text": "Refused requests record no reply"},
    "record_playbook_outcome": {"memory_id": "0" * 32, "success": True},
    "about_me": {},
    # The knowledge graph's tools (knowledge/mcp.py) are refused the same way.
    "graph_search": {"query": "anything"},
    "graph_handoff": {"project": "0" * 64},
    "entity_get": {"project": "0" * 64, "key": "plan-x"},
}


def _call(url: str, token: str | None, tool: str) -> httpx2.Response:
    """One raw JSON-RPC tools/call, as a client would POST it."""
    headers = {"Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": TOOL_CALLS[tool]},
    }
    return httpx2.post(url, json=body, headers=headers, timeout=30)


def _refused(response: httpx2.Response, status: int, code: str) -> dict[str, Any]:
    """A JSON-RPC error object for request 1, the shared error shape in its ``data``."""
    assert response.status_code == status, response.text
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] == 1, body
    assert body["error"]["code"] == -32001 and body["error"]["message"]
    error = body["error"]["data"]
    assert error["code"] == code and error["message"] == body["error"]["message"]
    assert error["message"]
    assert error["request_id"] == response.headers["x-request-id"]
    if status == 401:
        assert response.headers["www-authenticate"].startswith("Bearer")
    return dict(error)


def _assert_refused_for_every_tool(url: str, token: str | None, status: int, code: str) -> None:
    before = AuditEvent.objects.count()
    for tool in TOOL_CALLS:
        _refused(_call(url, token, tool), status, code)
    assert AuditEvent.objects.count() == before  # no tool ran: nothing was written or audited


@pytest.fixture
def people(acme: Tenant, globex: Tenant, alice: User, bob: User, charlie: User) -> dict[str, Any]:
    return {"acme": acme, "globex": globex, "alice": alice, "bob": bob, "charlie": charlie}


@pytest.mark.parametrize("path", ["/mcp/", "/api/atlas/mcp/alice"])
def test_it_refuses_a_request_without_a_token(atlas_server: str, people: Any, path: str) -> None:
    _assert_refused_for_every_tool(atlas_server + path, None, 401, "unauthenticated")


@pytest.mark.parametrize("path", ["/mcp/", "/api/atlas/mcp/alice"])
def test_it_refuses_a_malformed_or_unknown_token(atlas_server: str, people: Any, path: str) -> None:
    _assert_refused_for_every_tool(atlas_server + path, "not-a-token", 401, "token_malformed")
    forged = "atlas_aaaaaaaaaaaa_" + "A" * 43
    _assert_refused_for_every_tool(atlas_server + path, forged, 401, "token_invalid")


@pytest.mark.parametrize("path", ["/mcp/", "/api/atlas/mcp/alice"])
def test_it_refuses_a_revoked_token(atlas_server: str, people: Any, path: str) -> None:
    token = issue(people["acme"], people["alice"])
    token_revoke(token=PlatformToken.objects.get(user=people["alice"]))
    _assert_refused_for_every_tool(atlas_server + path, token, 401, "token_revoked")


@pytest.mark.parametrize("path", ["/mcp/", "/api/atlas/mcp/alice"])
def test_it_refuses_an_expired_token(atlas_server: str, people: Any, path: str) -> None:
    token = issue(people["acme"], people["alice"], expires_at=timezone.now() + timedelta(hours=1))
    PlatformToken.objects.filter(user=people["alice"]).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    _assert_refused_for_every_tool(atlas_server + path, token, 401, "token_expired")


def test_it_refuses_a_user_token_naming_another_user(atlas_server: str, people: Any) -> None:
    token = issue(people["acme"], people["alice"])
    _assert_refused_for_every_tool(
        f"{atlas_server}/api/atlas/mcp/bob", token, 404, "user_not_found"
    )


def test_it_refuses_a_tenant_token_naming_another_tenants_user(
    atlas_server: str, people: Any
) -> None:
    token = issue(people["acme"])
    _assert_refused_for_every_tool(
        f"{atlas_server}/api/atlas/mcp/charlie", token, 404, "user_not_found"
    )


def test_it_refuses_a_forged_path_user_id(atlas_server: str, people: Any) -> None:
    token = issue(people["acme"])
    for forged in (str(people["alice"].pk), "nobody", "ALICE"):
        _assert_refused_for_every_tool(
            f"{atlas_server}/api/atlas/mcp/{forged}", token, 404, "user_not_found"
        )


def test_another_tenants_user_and_an_unknown_user_look_the_same(
    atlas_server: str, people: Any
) -> None:
    token = issue(people["acme"])
    charlie = _refused(
        _call(f"{atlas_server}/api/atlas/mcp/charlie", token, "recall_memory"),
        404,
        "user_not_found",
    )
    nobody = _refused(
        _call(f"{atlas_server}/api/atlas/mcp/nobody", token, "recall_memory"), 404, "user_not_found"
    )
    assert charlie["message"].replace("charlie", "X") == nobody["message"].replace("nobody", "X")


def test_it_refuses_a_tenant_token_on_the_own_user_endpoint(atlas_server: str, people: Any) -> None:
    _assert_refused_for_every_tool(
        f"{atlas_server}/mcp/", issue(people["acme"]), 403, "user_required"
    )


def test_a_user_token_may_name_its_own_user_on_the_path_form(
    atlas_server: str, people: Any
) -> None:
    token = issue(people["acme"], people["alice"])

    async def scenario() -> dict[str, Any]:
        async with mcp_session(f"{atlas_server}/api/atlas/mcp/alice", token) as session:
            return payload(await session.call_tool("recall_memory", {"query": "anything"}))

    assert run(scenario)["memories"] == []


def test_it_refuses_a_host_outside_allowed_hosts(atlas_server: str, people: Any) -> None:
    token = issue(people["acme"], people["alice"])
    response = httpx2.post(
        f"{atlas_server}/mcp/",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Authorization": f"Bearer {token}", "Host": "evil.example"},
        timeout=30,
    )
    error = _refused(response, 400, "bad_host")
    assert "'evil.example'" in error["message"] and "ALLOWED_HOSTS" in error["message"]


def test_it_echoes_a_well_formed_request_id(atlas_server: str, people: Any) -> None:
    response = httpx2.post(
        f"{atlas_server}/mcp/", json={}, headers={"X-Request-ID": "trace-1234-abcd"}, timeout=30
    )
    assert response.status_code == 401
    assert response.headers["x-request-id"] == "trace-1234-abcd"


SECRET = "internal detail: password=hunter2 at 10.0.0.7:9200"


def test_a_request_that_is_not_json_rpc_gets_the_shared_error_shape(
    atlas_server: str, people: Any
) -> None:
    response = httpx2.post(f"{atlas_server}/mcp/", content=b"not json", timeout=30)

    assert response.status_code == 401
    error = response.json()["error"]
    assert error["code"] == "unauthenticated" and error["request_id"]
    assert "jsonrpc" not in response.json()


def test_an_unhandled_error_before_the_sdk_is_a_json_rpc_500_without_its_text(
    atlas_server: str, people: Any, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    from atlas_platform.mcp import auth

    def broken(**kwargs: Any) -> Any:
        raise RuntimeError(SECRET)

    monkeypatch.setattr(auth, "identity_resolve", broken)
    token = issue(people["acme"], people["alice"])

    with caplog.at_level("ERROR", logger="atlas_platform.mcp.auth"):
        response = _call(f"{atlas_server}/mcp/", token, "recall_memory")
        plain = httpx2.post(
            f"{atlas_server}/mcp/", content=b"{}", headers={"Authorization": f"Bearer {token}"}
        )

    assert response.status_code == 500, response.text
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] == 1 and body["error"]["code"] == -32603
    assert body["error"]["data"]["code"] == "internal_error"
    assert body["error"]["data"]["request_id"] == response.headers["x-request-id"]
    assert plain.status_code == 500 and plain.json()["error"]["code"] == "internal_error"
    for answer in (response, plain):
        assert SECRET not in answer.text and "RuntimeError" not in answer.text
    assert any(r.exc_info and SECRET in str(r.exc_info[1]) for r in caplog.records)


@pytest.mark.parametrize(
    ("case", "status_message"),
    [
        ("no token", "Send 'Authorization: Bearer <token>'."),
        ("malformed", "The token is malformed."),
        ("revoked", "The token has been revoked."),
        ("tenant token on /mcp/", "A tenant token must name the user it acts for"),
        ("unknown user", "No user 'nobody' in this tenant."),
        ("another user", "This token acts for one user only and cannot name 'bob'."),
        ("disabled user", "User 'bob' is disabled"),
    ],
)
def test_the_official_sdk_shows_the_servers_own_refusal(
    atlas_server: str, people: Any, case: str, status_message: str
) -> None:
    """What an SDK user sees is the server's sentence, not "Server returned an error response"
    or "Not Found": each refusal is a JSON-RPC error body the SDK surfaces as an MCPError."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError

    acme, alice, bob = people["acme"], people["alice"], people["bob"]
    if case == "disabled user":
        User.objects.filter(pk=bob.pk).update(status="disabled")
    url, token = {
        "no token": (f"{atlas_server}/mcp/", None),
        "malformed": (f"{atlas_server}/mcp/", "atlas_nope"),
        "revoked": (f"{atlas_server}/mcp/", None),
        "tenant token on /mcp/": (f"{atlas_server}/mcp/", issue(acme)),
        "unknown user": (f"{atlas_server}/api/atlas/mcp/nobody", issue(acme)),
        "another user": (f"{atlas_server}/api/atlas/mcp/bob", issue(acme, alice)),
        "disabled user": (f"{atlas_server}/api/atlas/mcp/bob", issue(acme)),
    }[case]
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if case == "revoked":
        raw = issue(acme, alice)
        token_revoke(token=PlatformToken.objects.get(lookup=raw.split("_")[1]))
        headers = {"Authorization": f"Bearer {raw}"}

    async def scenario() -> str:
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            try:
                await session.initialize()
            except MCPError as exc:
                return str(exc.error.message)
        raise AssertionError("the session was not refused")

    shown = run(scenario)
    assert shown.startswith(status_message), shown
