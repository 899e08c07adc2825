"""``manage.py atlas_archive``: move tenants' superseded facts into their archive now (what
beat runs daily; deploy/README.md, "Archive of superseded facts"); prints the count per
tenant."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from atlas_platform.context import Actor, acting_as
from atlas_platform.exceptions import AtlasError
from lifecycle.services.archive import archive_superseded

OPERATOR_RUN = Actor(type="system", id="archive", label="manage.py atlas_archive")


class Command(BaseCommand):
    help = (
        "Move facts superseded longer ago than each tenant's archive_after_days out of the "
        "hot index into the tenant's archive; prints the facts moved per tenant."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            with acting_as(OPERATOR_RUN):
                run = archive_superseded()
        except AtlasError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(json.dumps({"moved": run.moved}, indent=2, sort_keys=True))
