"""The demo command prints the admin logins and a working MCP token for alice."""

import re
from io import StringIO

import pytest
from django.core.management import call_command

from atlas_platform.exceptions import AuthenticationFailed
from tenants.services.tokens import token_authenticate

pytestmark = pytest.mark.django_db


def _demo() -> str:
    out = StringIO()
    call_command("atlas_demo", url="http://127.0.0.1:8123/admin/", stdout=out)
    return out.getvalue()


def test_it_prints_the_mcp_url_and_a_token_for_alice_that_replaces_the_last_one() -> None:
    first = re.search(r"Bearer (\S+)", _demo())
    second_output = _demo()
    second = re.search(r"Bearer (\S+)", second_output)

    assert first and second
    assert "Atlas MCP:     http://127.0.0.1:8123/mcp/" in second_output
    token = token_authenticate(raw=second.group(1))
    assert token.user is not None and token.user.external_id == "alice"
    with pytest.raises(AuthenticationFailed):
        token_authenticate(raw=first.group(1))
