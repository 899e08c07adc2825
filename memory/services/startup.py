"""What the platform checks before it serves: that its index prefix is its own.

``prefix_check`` answers the Django system check (``memory.checks``: ``runserver``,
``manage.py check``, ``migrate``) and the served entry points (``atlas_server.wsgi`` /
``asgi``). Only a proven mismatch refuses the start: indices or a template carrying another
deployment's id. Ones that carry no id at all (made before deployment ids) are reported, not
refused at start (requests that would use them are refused as before, a 503). A cluster that
cannot be reached, or a database not migrated yet, is readiness's business (``/readyz``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError

from atlas_platform.cluster import ClusterConfig
from memory.engine.base import EngineError
from memory.engine.elasticsearch.client import Connection
from memory.engine.elasticsearch.setup import conflict_message, foreign_indices
from tenants.services.deployment import deployment_id

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PrefixCheck:
    conflict: str | None = None  # another deployment's id is on the prefix: refuse to start
    unstamped: str | None = None  # some carry no deployment id (made before ids): a warning


def prefix_check() -> PrefixCheck:
    """Whether this deployment's index prefix is its own (nothing to say for another backend,
    or when the cluster or the database cannot answer now)."""
    if settings.ATLAS_MEMORY_BACKEND != "elasticsearch":
        return PrefixCheck()
    config = ClusterConfig.from_settings()
    if config is None:
        return PrefixCheck()
    try:
        deployment = deployment_id()
    except (DatabaseError, RuntimeError) as exc:  # not migrated yet, down, or not allowed
        # (a test run's collection): nothing to compare with
        logger.warning("deployment check skipped: no database", extra={"error": repr(exc)})
        return PrefixCheck()
    conn = Connection(config=config, keys=None, deployment=deployment)
    try:
        foreign = foreign_indices(conn)
    except EngineError as exc:
        logger.warning("deployment check skipped: no cluster", extra={"error": repr(exc)})
        return PrefixCheck()
    owned = {name: owner for name, owner in foreign.items() if owner}
    unowned = sorted(name for name, owner in foreign.items() if not owner)
    return PrefixCheck(
        conflict=conflict_message(conn, owned) if owned else None,
        unstamped=_unstamped_message(conn, unowned) if unowned else None,
    )


def _unstamped_message(conn: Connection, unowned: list[str]) -> str:
    names = ", ".join(unowned[:5])
    return (
        f"The index prefix {conn.config.index_prefix!r} holds indices without a deployment id "
        f"({names}), made before deployment ids: this deployment ({conn.deployment!r}) cannot "
        "tell whose they are, and refuses requests that would use them."
    )


def deployment_conflict() -> str | None:
    """The reason this deployment must not start on its index prefix, or None."""
    return prefix_check().conflict


def refuse_foreign_indices() -> None:
    """Raise (and so stop the process starting) on a proven mismatch; log an unstamped one."""
    found = prefix_check()
    if found.conflict:
        raise ImproperlyConfigured(found.conflict)
    if found.unstamped:
        logger.warning("index prefix holds indices without a deployment id: %s", found.unstamped)
