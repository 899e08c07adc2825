"""``manage.py atlas_backup [--into DIR]``: back the whole deployment up (deploy/README.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from atlas_platform.exceptions import AtlasError
from lifecycle.services.backup import deployment_backup


class Command(BaseCommand):
    help = (
        "Back up the database, the memory store (SQLite online backup, or an Elasticsearch "
        "snapshot with ATLAS_ES_ADMIN_USERNAME/_PASSWORD and ATLAS_ES_SNAPSHOT_LOCATION) and a "
        "manifest into a new directory; prints the manifest."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--into", default=None, help="Parent directory (ATLAS_BACKUP_DIR).")

    def handle(self, *args: Any, **options: Any) -> None:
        into = Path(options["into"]) if options["into"] else None
        try:
            manifest = deployment_backup(into=into)
        except AtlasError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(json.dumps(manifest, indent=2, sort_keys=True))
