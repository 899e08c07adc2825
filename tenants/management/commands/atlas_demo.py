"""Create (or refresh) the demo: a platform admin, tenant "demo" with its admin and two users.

Safe to run again: existing objects are kept, passwords are reset and printed, and alice's demo
MCP token is replaced (the previous one is revoked) and printed with the MCP URL.
"""

from __future__ import annotations

import secrets
from typing import Any
from urllib.parse import urljoin

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from tenants.models import Operator, PlatformToken, Tenant
from tenants.services.tenants import tenant_onboard
from tenants.services.tokens import token_issue, token_revoke
from tenants.services.users import operator_create

DEMO_SLUG = "demo"
DEMO_USERS = ("alice", "bob")
DEMO_TOKEN_NAME = "demo MCP token (alice)"  # noqa: S105 - a label, not a secret


class Command(BaseCommand):
    help = "Create or refresh the demo tenant and print the admin login."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--url", default="http://127.0.0.1:8000/admin/")

    def handle(self, *args: Any, **options: Any) -> None:
        password = secrets.token_urlsafe(12)
        tenant_password = secrets.token_urlsafe(12)
        accounts = get_user_model().objects
        if not accounts.filter(username="admin").exists():
            operator_create(
                username="admin", password=password, role=Operator.Role.PLATFORM_ADMIN, tenant=None
            )
        if not Tenant.objects.filter(slug=DEMO_SLUG).exists():
            tenant_onboard(
                slug=DEMO_SLUG,
                name="Demo Co",
                admin_username="demo-admin",
                admin_password=tenant_password,
                user_external_ids=DEMO_USERS,
            )
        for username, pw in (("admin", password), ("demo-admin", tenant_password)):
            account = accounts.get(username=username)
            account.set_password(pw)
            account.save(update_fields=["password"])
        mcp_token = self._alice_token()
        mcp_url = urljoin(options["url"], "/mcp/")
        self.stdout.write(
            "\n".join(
                [
                    "",
                    f"Atlas admin:   {options['url']}",
                    f"  platform admin  login: admin        password: {password}",
                    f"  tenant admin    login: demo-admin   password: {tenant_password}",
                    f"  demo tenant '{DEMO_SLUG}' with users: {', '.join(DEMO_USERS)}",
                    f"Atlas MCP:     {mcp_url}   (streamable HTTP, acting for alice)",
                    f"  Authorization: Bearer {mcp_token}",
                    "",
                ]
            )
        )

    def _alice_token(self) -> str:
        """A fresh MCP token for alice; the one an earlier run printed is revoked."""
        tenant = Tenant.objects.get(slug=DEMO_SLUG)
        alice = tenant.users.get(external_id="alice")
        earlier = PlatformToken.objects.filter(
            tenant=tenant, user=alice, name=DEMO_TOKEN_NAME, revoked_at__isnull=True
        )
        for token in earlier:
            token_revoke(token=token)
        return token_issue(tenant=tenant, user=alice, name=DEMO_TOKEN_NAME).secret
