"""``manage.py memory_sessions_backfill``: give stored turns that have no session one, by the
rule live turns follow (``memory.services.sessions``: the previous turn of the same user and
agent within ``ATLAS_SESSION_GAP_S``, else a new inferred session). Safe to run again: turns
with a session are never changed."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from atlas_platform.exceptions import AtlasError
from memory.services.sessions import memory_sessions_backfill
from tenants.models import Tenant, User


class Command(BaseCommand):
    help = "Assign inferred sessions to stored turns that have none (every user, or one tenant's)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--tenant", default=None, help="Only this tenant's users (its slug).")
        parser.add_argument(
            "--user", default=None, help="Only this user (external id; needs --tenant)."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        users = User.objects.select_related("tenant").order_by("tenant__slug", "external_id")
        if options["tenant"]:
            if not Tenant.objects.filter(slug=options["tenant"]).exists():
                raise CommandError(f"No tenant {options['tenant']!r}.")
            users = users.filter(tenant__slug=options["tenant"])
        if options["user"]:
            if not options["tenant"]:
                raise CommandError("--user needs --tenant.")
            users = users.filter(external_id=options["user"])
            if not users.exists():
                raise CommandError(f"No user {options['user']!r} in {options['tenant']!r}.")
        total = 0
        for user in users.iterator():
            try:
                count = memory_sessions_backfill(user=user)
            except AtlasError as exc:
                raise CommandError(
                    f"{user.tenant.slug}/{user.external_id}: {exc.public[0]}"
                ) from exc
            total += count
            if count:
                self.stdout.write(f"{user.tenant.slug}/{user.external_id}: {count} turn(s)")
        self.stdout.write(f"turns given a session: {total}")
