"""The memory store's part of a deployment's backup and restore (``lifecycle.services``): the
engine's copy (SQLite's online backup, or a cluster snapshot) and its counts for the
manifest. Restore runs with the platform stopped; it only fills an empty store."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.conf import settings

from atlas_platform.cluster import ClusterConfig
from atlas_platform.exceptions import AtlasError
from memory.engine.base import EngineError
from memory.services.common import backend, store_errors


class StoreBackupFailed(AtlasError):
    """The store could not be backed up or restored; the message says why (the operator's
    command shows it: a missing setting, a store that is not empty, the cluster's refusal)."""

    status_code = 409
    code = "store_backup_failed"


def snapshot_admin() -> ClusterConfig | None:
    """The cluster administrator's credential for snapshots (``ATLAS_ES_ADMIN_USERNAME`` /
    ``_PASSWORD`` in the command's environment, as ``es_platform_role`` takes it)."""
    username = os.environ.get("ATLAS_ES_ADMIN_USERNAME", "")
    if settings.ATLAS_MEMORY_BACKEND != "elasticsearch" or not username:
        return None
    password = os.environ.get("ATLAS_ES_ADMIN_PASSWORD", "")
    return ClusterConfig(url=settings.ATLAS_ES_URL, username=username, password=password)


def memory_store_kind() -> str:
    return backend().name


def memory_store_backup(*, into: Path, name: str) -> dict[str, Any]:
    """Copy the whole store as of one moment (files under ``into``, or snapshot ``name``)."""
    try:
        return backend().backup(into=into, name=name, admin=snapshot_admin())
    except EngineError as exc:
        raise StoreBackupFailed(str(exc)) from exc


def memory_store_restore(*, source: Path, detail: dict[str, Any]) -> None:
    """Put a backup's store back into this (empty) deployment's."""
    try:
        backend().restore(source=source, detail=detail, admin=snapshot_admin())
    except EngineError as exc:
        raise StoreBackupFailed(str(exc)) from exc


def memory_store_empty() -> bool:
    with store_errors():
        return backend().is_empty()


def memory_store_counts(*, tenant_ids: list[str]) -> dict[str, dict[str, int]]:
    """Documents per tenant (memory id) and type, superseded and catalog ones included."""
    counts: dict[str, dict[str, int]] = {}
    with store_errors():
        for tenant_id in tenant_ids:
            per_type: dict[str, int] = {}
            for point in backend().growth(tenant_id, bucket="month"):
                per_type[point.memory_type] = per_type.get(point.memory_type, 0) + point.count
            counts[tenant_id] = dict(sorted(per_type.items()))
    return counts
