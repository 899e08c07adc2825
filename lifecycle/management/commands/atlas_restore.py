"""``manage.py atlas_restore DIR``: restore a backup into an empty deployment, then re-apply
every erasure and revocation made since it (deploy/README.md). Run it with the web and worker
processes stopped; start them when it has printed its report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from atlas_platform.exceptions import AtlasError
from lifecycle.services.manifest import manifest_read
from lifecycle.services.restore import deployment_reapply, deployment_restore


class Command(BaseCommand):
    help = (
        "Restore the backup in DIR into this empty deployment and re-apply the erasure "
        "tombstones made since; prints the report (each re-applied entry)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("directory", help="A backup's directory (holds manifest.json).")
        parser.add_argument(
            "--allow-other-deployment",
            action="store_true",
            help="Restore a backup made by another deployment.",
        )
        parser.add_argument(
            "--reapply",
            action="store_true",
            help="Only re-apply the tombstone log onto an already restored deployment (a restore "
            "that stopped after its data was back).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        source = Path(options["directory"])
        try:
            if options["reapply"]:
                report = deployment_reapply(manifest=manifest_read(source))
            else:
                report = deployment_restore(
                    source=source, allow_other_deployment=options["allow_other_deployment"]
                )
        except AtlasError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(json.dumps(report, indent=2, sort_keys=True))
