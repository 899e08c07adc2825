"""The user change page shows copy-paste MCP client configs with the site's URL, never a secret."""

import html
import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from memory.mcp.client_config import client_snippets
from tenants.models import Tenant, User
from tenants.services.tokens import token_issue

pytestmark = pytest.mark.django_db


def test_the_user_page_shows_client_configs_for_the_users_mcp_url(
    acme_client: Client, acme: Tenant, alice: User, settings: Any
) -> None:
    settings.ALLOWED_HOSTS = ["atlas.example"]
    secret = token_issue(tenant=acme, user=alice, name="alice-agent").secret

    response = acme_client.get(
        reverse("admin:tenants_user_change", args=[alice.pk]), HTTP_HOST="atlas.example:8443"
    )

    page = html.unescape(response.content.decode())
    assert response.status_code == 200
    assert '"url": "http://atlas.example:8443/api/atlas/mcp/alice"' in page
    assert '"type": "http"' in page
    snippets = dict(client_snippets("http://atlas.example:8443/api/atlas/mcp/alice"))
    claude_code = json.loads(next(v for k, v in snippets.items() if k.startswith("Claude Code")))
    desktop = json.loads(next(v for k, v in snippets.items() if k.startswith("Claude Desktop")))
    # .mcp.json is usually committed: Claude Code expands ${ATLAS_TOKEN}, no literal token
    headers = claude_code["mcpServers"]["atlas"]["headers"]
    assert headers == {"Authorization": "Bearer ${ATLAS_TOKEN}"}
    # mcp-remote: the header through env, no space inside args (Windows splits on it)
    server = desktop["mcpServers"]["atlas"]
    assert not any(" " in arg for arg in server["args"])
    assert "Authorization:${AUTH_HEADER}" in server["args"]
    assert server["env"] == {"AUTH_HEADER": "Bearer <ATLAS_TOKEN>"}
    # Cursor's mcp.json the same way, in Cursor's own syntax
    cursor = json.loads(next(v for k, v in snippets.items() if k.startswith("Cursor")))
    cursor_headers = cursor["mcpServers"]["atlas"]["headers"]
    assert cursor_headers == {"Authorization": "Bearer ${env:ATLAS_TOKEN}"}
    for text in snippets.values():  # each one is on the page, with its copy button
        assert text in page
    assert page.count('class="button copy-snippet"') == len(snippets) == 4
    assert "mcp-remote" in page and "~/.cursor/mcp.json" in page
    assert "http://atlas.example:8443/mcp/" in page
    assert reverse("admin:tenants_platformtoken_add") in page
    assert secret not in page
    assert "atlas_" not in page.replace("atlas_admin", "").replace("atlas_token", "")


def test_the_users_external_id_is_escaped_in_the_url(acme_client: Client, acme: Tenant) -> None:
    odd = User.objects.create(tenant=acme, external_id="a b/<c>")

    response = acme_client.get(reverse("admin:tenants_user_change", args=[odd.pk]))

    assert "/api/atlas/mcp/a%20b%2F%3Cc%3E" in response.content.decode()
