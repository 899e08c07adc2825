"""``manage.py memory_migrate <tenant>``: move a tenant's memories from the embedded store to
Elasticsearch, provision scoped keys and switch the tenant to ``dls`` (``memory.services.
migration``). Run it again to resume; it exits non-zero unless every memory was verified."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from atlas_platform.exceptions import AtlasError
from memory.services.migration import tenant_backend_migrate
from tenants.models import Tenant


class Command(BaseCommand):
    help = (
        "Copy a tenant's memories from the embedded store to Elasticsearch, verify, switch to dls."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("tenant", help="The tenant's slug.")
        parser.add_argument(
            "--from",
            dest="source",
            default=None,
            help="The embedded store to read (default: ATLAS_EMBEDDED_PATH).",
        )
        parser.add_argument(
            "--keep-mode", action="store_true", help="Copy and verify only; leave the mode as is."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = Tenant.objects.filter(slug=options["tenant"]).first()
        if tenant is None:
            raise CommandError(f"No tenant {options['tenant']!r}.")
        source = Path(options["source"] or settings.ATLAS_EMBEDDED_PATH)
        try:
            report = tenant_backend_migrate(
                tenant=tenant,
                source_path=source,
                switch_mode=not options["keep_mode"],
                progress=lambda line: self.stdout.write(f"  {line}"),
            )
        except AtlasError as exc:
            raise CommandError(exc.public[0]) from exc
        copied = ", ".join(f"{k} {v}" for k, v in report.copied.items())
        self.stdout.write(f"copied: {copied}; keys provisioned: {report.keys_provisioned}")
        for problem in report.key_errors:
            self.stdout.write(f"  key not provisioned: {problem}")
        if not report.verified:
            raise CommandError(
                f"{len(report.missing)} memories not found on the cluster; run it again."
            )
        self.stdout.write(
            f"verified: every memory found; tenant {tenant.slug} is in mode {report.mode}"
        )
        if report.key_errors:
            raise CommandError("Some users have no key yet: provision them, then run it again.")
