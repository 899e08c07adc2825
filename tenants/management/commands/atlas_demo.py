"""Create (or refresh) the demo: a platform admin, tenant "demo" with its admin and two users.

Safe to run again: existing objects are kept, passwords are reset and printed.
"""

from __future__ import annotations

import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from tenants.models import Operator, Tenant
from tenants.services.tenants import tenant_onboard
from tenants.services.users import operator_create

DEMO_SLUG = "demo"
DEMO_USERS = ("alice", "bob")


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
        self.stdout.write(
            "\n".join(
                [
                    "",
                    f"Atlas admin:   {options['url']}",
                    f"  platform admin  login: admin        password: {password}",
                    f"  tenant admin    login: demo-admin   password: {tenant_password}",
                    f"  demo tenant '{DEMO_SLUG}' with users: {', '.join(DEMO_USERS)}",
                    "",
                ]
            )
        )
