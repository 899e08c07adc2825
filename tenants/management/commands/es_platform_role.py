"""``manage.py es_platform_role``: create (or update) the platform's least-privileged role
and user on a production cluster, with an administrator's credential given for this command
only. Then run the platform with ``ATLAS_ES_USERNAME`` / ``ATLAS_ES_PASSWORD`` of that user
(deploy/README.md, "Cluster credential").

    ATLAS_ES_ADMIN_USERNAME=elastic ATLAS_ES_ADMIN_PASSWORD=... \\
    ATLAS_ES_PLATFORM_PASSWORD=... manage.py es_platform_role --user atlas_platform

``--remove`` deletes the user and role again."""

from __future__ import annotations

import os
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from atlas_platform.cluster import Cluster, ClusterConfig
from atlas_platform.exceptions import AtlasError
from atlas_platform.platform_role import platform_role_apply, platform_role_remove


class Command(BaseCommand):
    help = "Create the Atlas platform's least-privileged Elasticsearch role and user."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--role", default="atlas_platform", help="Role name.")
        parser.add_argument("--user", default="atlas_platform", help="Native user name.")
        parser.add_argument(
            "--prefix",
            default=None,
            help="Index prefix the role covers (<prefix>-*); default ATLAS_ES_INDEX_PREFIX.",
        )
        parser.add_argument("--remove", action="store_true", help="Delete the user and role.")

    def handle(self, *args: Any, **options: Any) -> None:
        url = settings.ATLAS_ES_URL
        admin_user = os.environ.get("ATLAS_ES_ADMIN_USERNAME", "")
        admin_password = os.environ.get("ATLAS_ES_ADMIN_PASSWORD", "")
        if not url or not admin_user or not admin_password:
            raise CommandError(
                "Needs ATLAS_ES_URL, ATLAS_ES_ADMIN_USERNAME and ATLAS_ES_ADMIN_PASSWORD."
            )
        admin = Cluster(ClusterConfig(url=url, username=admin_user, password=admin_password))
        try:
            if options["remove"]:
                platform_role_remove(admin, role=options["role"], username=options["user"])
                self.stdout.write(f"removed user {options['user']} and role {options['role']}")
                return
            password = os.environ.get("ATLAS_ES_PLATFORM_PASSWORD", "")
            if len(password) < 12:
                raise CommandError("ATLAS_ES_PLATFORM_PASSWORD must hold 12 or more characters.")
            prefix = options["prefix"] or settings.ATLAS_ES_INDEX_PREFIX
            tiers = platform_role_apply(
                admin,
                role=options["role"],
                username=options["user"],
                password=password,
                prefix=prefix,
            )
        except AtlasError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(
            f"role {options['role']} (indices {prefix}-*) and user {options['user']} are in place"
        )
        self.stdout.write(f"archive: {tiers.describe()}")
