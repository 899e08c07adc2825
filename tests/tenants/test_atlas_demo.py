"""The demo command prints the admin logins and an MCP token for alice, and keeps them across
runs (a restart of ``make run`` must not break a configured client); ``--reset`` replaces
them."""

import re
from io import StringIO

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command
from django.core.management.base import CommandError

from atlas_platform.exceptions import AuthenticationFailed
from tenants.models import PlatformToken
from tenants.services.tokens import token_authenticate, token_revoke

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _own_var_dir(settings, tmp_path):
    settings.VAR_DIR = tmp_path


def _demo(**options) -> dict[str, str]:
    out = StringIO()
    call_command("atlas_demo", url="http://127.0.0.1:8123/admin/", stdout=out, **options)
    text = out.getvalue()
    found = {
        "admin": re.search(r"login: admin\s+password: (\S+)", text),
        "demo-admin": re.search(r"login: demo-admin\s+password: (\S+)", text),
        "token": re.search(r"Bearer (\S+)", text),
    }
    assert all(found.values()), text
    assert "Atlas MCP:     http://127.0.0.1:8123/mcp/" in text
    return {k: m.group(1) for k, m in found.items() if m}


def _works(creds: dict[str, str]) -> bool:
    logins = all(authenticate(username=u, password=creds[u]) for u in ("admin", "demo-admin"))
    try:
        token = token_authenticate(raw=creds["token"])
    except AuthenticationFailed:
        return False
    return logins and token.user is not None and token.user.external_id == "alice"


def test_a_second_run_prints_the_same_working_credentials(tmp_path) -> None:
    first = _demo()
    second = _demo()

    assert second == first and _works(second)
    assert (tmp_path / "demo-credentials.json").stat().st_mode & 0o777 == 0o600


def test_reset_makes_new_ones_and_revokes_the_old_token() -> None:
    first = _demo()
    reset = _demo(reset=True)

    assert reset["admin"] != first["admin"] and reset["token"] != first["token"]
    assert _works(reset)
    with pytest.raises(AuthenticationFailed):
        token_authenticate(raw=first["token"])


def test_credentials_that_stopped_working_are_replaced() -> None:
    first = _demo()
    token_revoke(token=PlatformToken.objects.get(name="demo MCP token (alice)", revoked_at=None))

    second = _demo()

    assert second["token"] != first["token"] and second["admin"] == first["admin"]
    assert _works(second)


def test_it_refuses_to_run_in_production(settings) -> None:
    settings.PRODUCTION = True

    with pytest.raises(CommandError):
        _demo()
