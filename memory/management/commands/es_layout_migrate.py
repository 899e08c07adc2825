"""``manage.py es_layout_migrate [--delete-legacy]``: move existing memories into the
per-tenant index layout, rotate every scoped key and make missing catalog keys
(``memory.services.layout``). Run it
after upgrading from the shared ``<prefix>-memories`` index, and after changing a tenant's
statistics scope. Safe to run again: a second run moves nothing."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from atlas_platform.exceptions import AtlasError
from memory.services.layout import memory_layout_migrate


class Command(BaseCommand):
    help = "Move memories into the per-tenant index layout and rotate scoped keys."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--delete-legacy",
            action="store_true",
            help="Delete the shared <prefix>-memories index once every document moved "
            "(kept when some belong to no tenant or user of this database).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            result = memory_layout_migrate(delete_legacy=options["delete_legacy"])
        except AtlasError as exc:
            raise CommandError(str(exc)) from exc
        r = result.relocation
        self.stdout.write(
            f"indices read: {len(r.sources)}; moved: {r.moved}; already in place: {r.kept}; "
            f"orphans left: {r.orphans}; legacy index deleted: {r.legacy_deleted}; "
            f"keys rotated: {result.keys_rotated}; key rotations failed: {result.keys_failed}; "
            f"catalog keys made: {result.catalog_keys_made}"
        )
        if result.keys_failed:
            raise CommandError("Some keys were not rotated: run the command again.")
