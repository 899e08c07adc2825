"""``manage.py catalog_import --tenant SLUG FILE [--replace]``: load catalog documents.

FILE is JSON Lines, one ``{"text": ..., "id"?: ..., "name"?: ..., "tags"?: [...]}`` per line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from atlas_platform.exceptions import AtlasError
from memory.services.catalog import catalog_import
from tenants.models import Tenant


class Command(BaseCommand):
    help = "Import (or, with --replace, replace) a tenant's catalog from a JSON Lines file."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("file")
        parser.add_argument("--tenant", required=True, help="tenant slug")
        parser.add_argument("--replace", action="store_true", help="remove documents not in FILE")

    def handle(self, *args: Any, **options: Any) -> None:
        tenant = Tenant.objects.filter(slug=options["tenant"]).first()
        if tenant is None:
            raise CommandError(f"No tenant {options['tenant']!r}.")
        documents = []
        for n, line in enumerate(Path(options["file"]).read_text().splitlines(), start=1):
            if not line.strip():
                continue
            try:
                documents.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise CommandError(f"Line {n} is not JSON: {exc.msg}.") from exc
        try:
            result = catalog_import(tenant=tenant, documents=documents, replace=options["replace"])
        except AtlasError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(f"wrote {len(result.written)} documents, removed {result.removed}")
