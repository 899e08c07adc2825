"""What the platform checks before it serves: that its index prefix is its own.

``deployment_conflict`` answers the Django system check (``memory.checks``: ``runserver``,
``manage.py check``, ``migrate``) and the served entry points (``atlas_server.wsgi`` /
``asgi``). Only a proven mismatch refuses the start: a cluster that cannot be reached, or a
database not migrated yet, is readiness's business (``/readyz``), not a reason to stay down.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError

from atlas_platform.cluster import ClusterConfig
from memory.engine.base import EngineError
from memory.engine.elasticsearch.client import Connection
from memory.engine.elasticsearch.setup import deployment_conflict as index_conflict
from tenants.services.deployment import deployment_id

logger = logging.getLogger(__name__)


def deployment_conflict() -> str | None:
    """The reason this deployment must not start on its index prefix (it holds another
    deployment's indices), or None: no conflict, another backend, or nothing provable now."""
    if settings.ATLAS_MEMORY_BACKEND != "elasticsearch":
        return None
    config = ClusterConfig.from_settings()
    if config is None:
        return None
    try:
        deployment = deployment_id()
    except (DatabaseError, RuntimeError) as exc:  # not migrated yet, down, or not allowed
        # (a test run's collection): nothing to compare with
        logger.warning("deployment check skipped: no database", extra={"error": repr(exc)})
        return None
    try:
        return index_conflict(Connection(config=config, keys=None, deployment=deployment))
    except EngineError as exc:
        logger.warning("deployment check skipped: no cluster", extra={"error": repr(exc)})
        return None


def refuse_foreign_indices() -> None:
    """Raise (and so stop the process starting) when ``deployment_conflict`` finds one."""
    message = deployment_conflict()
    if message:
        raise ImproperlyConfigured(message)
