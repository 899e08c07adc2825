"""Auto-provisioning through the MCP endpoint, seen through the official SDK: the first
``record_turn`` for an unknown user creates them (REST's rule, "the first turn provisions"),
where the tenant turned ``auto_provision_users`` on and the token may provision users.

The client connects first (initialize, tools/list) with nobody behind the named id; any other
tool before that first turn answers the server's own ``user_not_found``. Without the setting or
the right, the connection itself is refused with that message.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from tenants.models import AuditEvent, PlatformToken, ScopedKey, Tenant, User
from tests.atlas_platform.mcp.conftest import issue, mcp_session, payload, run, serving

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def open_tenant(acme: Tenant) -> Tenant:
    Tenant.objects.filter(pk=acme.pk).update(auto_provision_users=True)
    acme.refresh_from_db()
    return acme


def _error(result: Any) -> dict[str, Any]:
    assert result.is_error, result
    error = payload(result)["error"]
    assert isinstance(error, dict)
    return error


def test_the_first_turn_provisions_an_unknown_user(atlas_server: str, open_tenant: Tenant) -> None:
    token = issue(open_tenant, allow_provisioning=True)
    url = f"{atlas_server}/api/atlas/mcp/erin"

    async def scenario() -> dict[str, Any]:
        async with mcp_session(url, token) as session:
            tools = {tool.name for tool in (await session.list_tools()).tools}
            before_turn = await session.call_tool("recall_memory", {"query": "tea"})
            made_before_turn = await _exists("erin")
            turn = await session.call_tool("record_turn", {"text": "I drink oolong every day"})
            again = await session.call_tool("record_turn", {"text": "And jasmine on Sundays"})
            recall = await session.call_tool("recall_memory", {"query": "oolong"})
        return {
            "tools": tools,
            "before_turn": before_turn,
            "made_before_turn": made_before_turn,
            "turn": turn,
            "again": again,
            "recall": recall,
        }

    seen = run(scenario)

    assert "record_turn" in seen["tools"]
    error = _error(seen["before_turn"])  # only a turn provisions, as on REST
    assert error["code"] == "user_not_found"
    assert error["message"] == "No user 'erin' in this tenant."
    assert seen["made_before_turn"] is False
    assert not seen["turn"].is_error, payload(seen["turn"])
    assert not seen["again"].is_error, payload(seen["again"])
    user = User.objects.get(tenant=open_tenant, external_id="erin")
    assert user.status == User.Status.ACTIVE
    texts = [m["text"] for m in payload(seen["recall"])["memories"]]
    assert "I drink oolong every day" in texts
    # Audited as REST's provisioning is: one user.create, by the token, in the turn's request.
    created = AuditEvent.objects.filter(action="user.create", subject_user=user)
    assert created.count() == 1
    event = created.get()
    token_row = PlatformToken.objects.get(lookup=token.split("_")[1])
    assert (event.actor_type, event.actor_id) == ("token", str(token_row.pk))
    assert event.request_id
    turn_events = AuditEvent.objects.filter(subject_user=user).exclude(action="user.create")
    assert event.request_id in set(turn_events.values_list("request_id", flat=True))


def _refusal(url: str, token: str) -> str:
    """The message the SDK shows when ``initialize`` is refused."""
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def scenario() -> str:
        headers = {"Authorization": f"Bearer {token}"}
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

    return run(scenario)


async def _exists(external_id: str) -> bool:
    from asgiref.sync import sync_to_async

    return await sync_to_async(User.objects.filter(external_id=external_id).exists)()


@pytest.mark.parametrize("case", ["setting off", "token without the right", "user token"])
def test_without_the_setting_or_the_right_the_sdk_shows_user_not_found(
    atlas_server: str, acme: Tenant, alice: User, case: str
) -> None:
    if case != "setting off":
        Tenant.objects.filter(pk=acme.pk).update(auto_provision_users=True)
    token = {
        "setting off": lambda: issue(acme, allow_provisioning=True),
        "token without the right": lambda: issue(acme),
        "user token": lambda: issue(acme, alice),
    }[case]()
    shown = _refusal(f"{atlas_server}/api/atlas/mcp/erin", token)

    expected = {
        "user token": "This token acts for one user only and cannot name 'erin'.",
    }.get(case, "No user 'erin' in this tenant.")
    assert shown == expected
    assert not User.objects.filter(external_id="erin").exists()
    assert not AuditEvent.objects.filter(action="user.create").exists()


def test_a_malformed_id_is_refused_at_connect_even_where_provisioning_is_on(
    atlas_server: str, open_tenant: Tenant
) -> None:
    token = issue(open_tenant, allow_provisioning=True)
    url = f"{atlas_server}/api/atlas/mcp/-starts-with-a-dash"

    assert _refusal(url, token) == "No such user in this tenant."
    assert User.objects.count() == 0


def test_a_disabled_user_is_not_re_provisioned(
    atlas_server: str, open_tenant: Tenant, alice: User
) -> None:
    User.objects.filter(pk=alice.pk).update(status="disabled")
    token = issue(open_tenant, allow_provisioning=True)

    shown = _refusal(f"{atlas_server}/api/atlas/mcp/alice", token)

    assert shown.startswith("User 'alice' is disabled"), shown
    assert User.objects.filter(external_id="alice").count() == 1


@pytest.fixture
def cluster_server(transactional_db: None, es: Any, settings: Any) -> Iterator[str]:
    settings.ATLAS_MEMORY_BACKEND = "elasticsearch"
    with serving() as url:
        yield url


def test_on_a_cluster_enforced_tenant_the_user_gets_their_scoped_key(cluster_server: str) -> None:
    """As the admin provisions: the key is made with the user, and the turn's recall reads
    through it (mode dls reads need one)."""
    tenant = Tenant.objects.create(
        slug="dlsmcp", name="DLS MCP", isolation_mode="dls", auto_provision_users=True
    )
    token = issue(tenant, allow_provisioning=True)

    async def scenario() -> tuple[Any, Any]:
        async with mcp_session(f"{cluster_server}/api/atlas/mcp/gina", token) as session:
            turn = await session.call_tool("record_turn", {"text": "My locker code is 4471"})
            recall = await session.call_tool("recall_memory", {"query": "locker code 4471"})
        return turn, recall

    turn, recall = run(scenario)

    assert not turn.is_error, payload(turn)
    user = User.objects.get(tenant=tenant, external_id="gina")
    key = ScopedKey.objects.get(user=user)
    assert key.status == "active"
    texts = [m["text"] for m in payload(recall)["memories"]]
    assert "My locker code is 4471" in texts
    assert AuditEvent.objects.filter(action="user.create", subject_user=user).count() == 1
