"""Create the demo, or print it again: a platform admin, tenant "demo" with its admin and two
users, and an MCP token for alice.

Development only. The passwords and the token are made once and kept in
``var/demo-credentials.json`` (readable by the owner only), so a restart of ``make run`` prints
the same ones and a configured MCP client keeps working. ``--reset`` (``make run
RESET_DEMO=1``) makes new passwords and a new token and revokes the old token; so does
deleting that file. Credentials that no longer work (a password changed in the admin, the
token revoked) are replaced and the new ones printed.
"""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from atlas_platform.exceptions import AuthenticationFailed
from tenants.models import Operator, PlatformToken, Tenant
from tenants.services.tenants import tenant_onboard
from tenants.services.tokens import token_authenticate, token_issue, token_revoke
from tenants.services.users import operator_create

DEMO_SLUG = "demo"
DEMO_USERS = ("alice", "bob")
DEMO_TOKEN_NAME = "demo MCP token (alice)"  # noqa: S105 - a label, not a secret
ACCOUNTS = ("admin", "demo-admin")


def credentials_path() -> Path:
    return Path(settings.VAR_DIR) / "demo-credentials.json"


class Command(BaseCommand):
    help = "Create the demo tenant (once) and print its logins and MCP token (kept across runs)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--url", default="http://127.0.0.1:8000/admin/")
        parser.add_argument(
            "--reset", action="store_true", help="New passwords and MCP token (old token revoked)."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if settings.PRODUCTION:
            raise CommandError("atlas_demo is for development: it keeps passwords in a file.")
        kept = {} if options["reset"] else self._kept()
        passwords = {name: self._password(name, kept.get(name)) for name in ACCOUNTS}
        self._create(passwords)
        token = self._alice_token(None if options["reset"] else kept.get("mcp_token"))
        self._keep({**passwords, "mcp_token": token})
        mcp_url = urljoin(options["url"], "/mcp/")
        self.stdout.write(
            "\n".join(
                [
                    "",
                    f"Atlas admin:   {options['url']}",
                    f"  platform admin  login: admin        password: {passwords['admin']}",
                    f"  tenant admin    login: demo-admin   password: {passwords['demo-admin']}",
                    f"  demo tenant '{DEMO_SLUG}' with users: {', '.join(DEMO_USERS)}",
                    f"Atlas MCP:     {mcp_url}   (streamable HTTP, acting for alice)",
                    f"  Authorization: Bearer {token}",
                    "  Which MCP URL: a user's own token (this one) uses /mcp/; a tenant token "
                    "uses /api/atlas/mcp/<user_id> (the user page in the admin shows both).",
                    f"  (kept in {credentials_path()} across restarts; new ones: make run "
                    "RESET_DEMO=1)",
                    "",
                ]
            )
        )

    def _kept(self) -> dict[str, str]:
        try:
            data = json.loads(credentials_path().read_text())
        except (OSError, ValueError):
            return {}
        return (
            {k: v for k, v in data.items() if isinstance(v, str)} if isinstance(data, dict) else {}
        )

    def _keep(self, data: dict[str, str]) -> None:
        path = credentials_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(data, out, indent=2)

    def _password(self, username: str, kept: str | None) -> str:
        """The kept password while it still logs in (or the account is yet to be made)."""
        account = get_user_model().objects.filter(username=username).first()
        if kept and (account is None or account.check_password(kept)):
            return kept
        return secrets.token_urlsafe(12)

    def _create(self, passwords: dict[str, str]) -> None:
        accounts = get_user_model().objects
        if not accounts.filter(username="admin").exists():
            operator_create(
                username="admin",
                password=passwords["admin"],
                role=Operator.Role.PLATFORM_ADMIN,
                tenant=None,
            )
        if not Tenant.objects.filter(slug=DEMO_SLUG).exists():
            tenant_onboard(
                slug=DEMO_SLUG,
                name="Demo Co",
                admin_username="demo-admin",
                admin_password=passwords["demo-admin"],
                user_external_ids=DEMO_USERS,
            )
        for username, password in passwords.items():
            account = accounts.get(username=username)
            if not account.check_password(password):
                account.set_password(password)
                account.save(update_fields=["password"])

    def _alice_token(self, kept: str | None) -> str:
        """The kept token while it still works; otherwise a new one (earlier ones revoked)."""
        tenant = Tenant.objects.get(slug=DEMO_SLUG)
        alice = tenant.users.get(external_id="alice")
        if kept:
            try:
                token = token_authenticate(raw=kept)
            except AuthenticationFailed:
                token = None
            if token is not None and token.user_id == alice.pk:
                return kept
        earlier = PlatformToken.objects.filter(
            tenant=tenant, user=alice, name=DEMO_TOKEN_NAME, revoked_at__isnull=True
        )
        for old in earlier:
            token_revoke(token=old)
        return token_issue(tenant=tenant, user=alice, name=DEMO_TOKEN_NAME).secret
