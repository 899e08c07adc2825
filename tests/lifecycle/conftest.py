"""The lifecycle tests' deployments: the embedded default, and Elasticsearch (``dls``, keys
on the cluster) with a snapshot repository (``ATLAS_ES_SNAPSHOT_LOCATION``: a directory in
the node's ``path.repo``; `make services` sets both)."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from typing import Any

import pytest

from memory.services import bookkeeping
from tests.conftest import service_missing


@pytest.fixture(params=["embedded", "es-dls"])
def deployment(request: pytest.FixtureRequest, settings: Any, tmp_path: Any) -> Iterator[str]:
    settings.ATLAS_BACKUP_DIR = str(tmp_path / "backups")
    if request.param == "embedded":
        settings.ATLAS_MEMORY_BACKEND = "embedded"
        settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")
    else:
        request.getfixturevalue("es")
        settings.ATLAS_MEMORY_BACKEND = "elasticsearch"
        location = os.environ.get("ATLAS_ES_SNAPSHOT_LOCATION", "")
        if not location or not os.environ.get("ATLAS_ES_ADMIN_USERNAME"):
            service_missing(
                "An Elasticsearch snapshot repository (ATLAS_ES_SNAPSHOT_LOCATION in the node's "
                "path.repo, with ATLAS_ES_ADMIN_USERNAME / _PASSWORD)"
            )
        settings.ATLAS_ES_SNAPSHOT_LOCATION = f"{location}/{secrets.token_hex(6)}"
    yield request.param
    bookkeeping.drain()
    if request.param != "embedded":
        _drop_snapshots(settings)


def _drop_snapshots(settings: Any) -> None:
    """The test's snapshots and repository off the node (housekeeping: never fails a test)."""
    from elasticsearch import Elasticsearch

    admin = Elasticsearch(
        settings.ATLAS_ES_URL,
        basic_auth=(os.environ["ATLAS_ES_ADMIN_USERNAME"], os.environ["ATLAS_ES_ADMIN_PASSWORD"]),
        request_timeout=60,
    )
    repository = f"{settings.ATLAS_ES_INDEX_PREFIX}-backups"
    with contextlib.suppress(Exception):
        admin.snapshot.delete(repository=repository, snapshot="*")
        admin.snapshot.delete_repository(name=repository)


@pytest.fixture(params=["embedded", "es-filter"])
def store(request: pytest.FixtureRequest, settings: Any, tmp_path: Any) -> Iterator[str]:
    """The memory store: the embedded default, or Elasticsearch."""
    if request.param == "embedded":
        settings.ATLAS_MEMORY_BACKEND = "embedded"
        settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")
    else:
        request.getfixturevalue("es")
        settings.ATLAS_MEMORY_BACKEND = "elasticsearch"
    yield request.param
    bookkeeping.drain()
