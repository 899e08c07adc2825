"""``deployment_backup``: one consistent backup of a deployment (``manage.py atlas_backup``).

In order: the tombstone log's position (every entry after it is re-applied by a restore, so
an erasure that races the copy is never lost), the database (one REPEATABLE READ transaction
on PostgreSQL: every table as of one moment; Django's serializer, so SQLite deployments back
up the same way), then the memory store (SQLite's online backup, or a cluster snapshot).
A document written between the database's copy and the store's belongs to a write whose
audit row is not in the database copy: it is restored, never lost. Last the manifest.
"""

from __future__ import annotations

import importlib.metadata
import json
import platform
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import django
from django.conf import settings
from django.core.management import call_command
from django.db import connection, transaction
from django.db.migrations.recorder import MigrationRecorder

from atlas_platform.tombstones import tombstone_position
from lifecycle.services.manifest import FORMAT, manifest_write
from memory.public import memory_store_backup, memory_store_counts, memory_store_kind
from tenants.models import Tenant
from tenants.services.audit import audit_record
from tenants.services.deployment import deployment_id

DATABASE_FILE = "database.jsonl"
# Rows a migrated database makes for itself (content types, permissions) or that die with
# a process (sessions); the admin's own log holds object labels, not needed to serve.
EXCLUDED = ["contenttypes", "auth.permission", "sessions", "admin.logentry"]


def deployment_backup(*, into: Path | None = None) -> dict[str, Any]:
    """Back the deployment up into a new directory under ``into`` (``ATLAS_BACKUP_DIR``);
    returns the manifest (its directory is ``manifest["path"]``)."""
    deployment = deployment_id()
    started = datetime.now(UTC)
    name = f"atlas-{started:%Y%m%d-%H%M%S-%f}"
    directory = Path(into or settings.ATLAS_BACKUP_DIR) / name
    directory.mkdir(parents=True)
    position = tombstone_position()
    rows = _dump_database(directory / DATABASE_FILE)
    store = memory_store_backup(into=directory, name=name)
    tenants = {t.memory_id: t.slug for t in Tenant.objects.all()}
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "name": name,
        "path": str(directory),
        "created_at": started.isoformat(),
        "finished_at": datetime.now(UTC).isoformat(),
        "deployment_id": deployment,
        "versions": versions(),
        "tombstone_position": position,
        "database": {"file": DATABASE_FILE, "rows": rows},
        "store": {"backend": memory_store_kind(), **store},
        "counts": {
            tenant_id: {"slug": tenants[tenant_id], "memories": counts}
            for tenant_id, counts in memory_store_counts(tenant_ids=sorted(tenants)).items()
        },
    }
    manifest = manifest_write(directory, manifest)
    with transaction.atomic():
        audit_record(
            action="deployment.backup",
            tenant=None,
            metadata={"name": name, "tombstone_position": position, "rows": sum(rows.values())},
        )
    return manifest


def _dump_database(path: Path) -> dict[str, int]:
    """Every table (but ``EXCLUDED``) as JSON lines, read as of one moment; rows per model."""
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        call_command(
            "dumpdata",
            exclude=EXCLUDED,
            natural_foreign=True,
            format="jsonl",
            output=str(path),
            verbosity=0,
        )
    rows: dict[str, int] = {}
    with path.open() as f:
        for line in f:
            if line.strip():
                model = json.loads(line)["model"]
                rows[model] = rows.get(model, 0) + 1
    return dict(sorted(rows.items()))


def applied_migrations() -> list[str]:
    return sorted(
        f"{app}.{name}" for app, name in MigrationRecorder(connection).applied_migrations()
    )


def versions() -> dict[str, Any]:
    return {
        "atlas": importlib.metadata.version("atlas"),
        "django": django.get_version(),
        "python": platform.python_version(),
        "database": connection.vendor,
        "migrations": applied_migrations(),
    }
