"""Moving a tenant's memories from the embedded store to Elasticsearch, then to cluster-enforced
isolation: ``tenant_backend_migrate`` (the ``memory_migrate`` command).

The tenant created on the embedded default stays in mode ``filter`` with its memories in the
SQLite file. Once Atlas runs with a cluster (``ATLAS_ES_URL``, so the backend is Elasticsearch),
this copies every document of the tenant (each user's, superseded ones included, the
knowledge graph's searchable entities, and the catalog) under its own id, verifies that each
one is found on the cluster, provisions the scoped keys users lack, and only then switches the
tenant to ``dls``.

Resumable: writes are upserts by id, and an owner whose documents are all found already is not
copied again, so an interrupted run is simply run again. Verified: the mode switches only when
every source id was found; otherwise the report lists what is missing and nothing is switched.
The source file is read, never changed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet

from atlas_platform.exceptions import ValidationError
from memory.engine.base import MemoryBackend
from memory.engine.embedded import EmbeddedBackend
from memory.engine.types import MemoryDoc, ReadScope
from memory.services.common import backend, embedder, store_errors
from memory.services.scoping import catalog_scope, writer_scope
from memory.services.writes import embedding_text
from memory.types import ERASABLE_TYPES, MEMORY_TYPES
from tenants.models import ScopedKey, Tenant, User
from tenants.services.audit import audit_record
from tenants.services.scoped_keys import scoped_key_provision
from tenants.services.tenants import tenant_isolation_set

logger = logging.getLogger(__name__)
PAGE = 200


@dataclass
class MigrationReport:
    """What a run did: documents copied per type, owners skipped as already complete, keys
    made, ids not found on the cluster (empty: verified), and the tenant's mode after it."""

    copied: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MEMORY_TYPES, 0))
    skipped_owners: int = 0
    keys_provisioned: int = 0
    missing: list[str] = field(default_factory=list)
    key_errors: list[str] = field(default_factory=list)
    mode: str = ""

    @property
    def verified(self) -> bool:
        return not self.missing


def _owners(tenant: Tenant) -> list[tuple[str, ReadScope, tuple[str, ...]]]:
    """(label, scope, types) for each user of the tenant (any status) and the catalog."""
    users = User.objects.filter(tenant=tenant).order_by("pk")
    owners = [
        (
            u.external_id,
            writer_scope(tenant_id=tenant.memory_id, user_id=u.memory_id),
            ERASABLE_TYPES,  # memories and other apps' searchable documents (entities)
        )
        for u in users
    ]
    return [*owners, ("catalog", catalog_scope(tenant), ("catalog",))]


def _pages(
    store: MemoryBackend, scope: ReadScope, types: tuple[str, ...]
) -> Iterator[list[MemoryDoc]]:
    after: tuple[str, str] | None = None
    while True:
        docs = store.scan(scope, memory_types=types, search_after=after, limit=PAGE)  # type: ignore[arg-type]
        docs = [d for d in docs if d.user_id == scope.user_id]  # the catalog scope: no users
        if docs:
            yield docs
        if len(docs) < PAGE:
            return
        after = (docs[-1].created_at.isoformat(), docs[-1].id)


def _missing(
    source: MemoryBackend, target: MemoryBackend, scope: ReadScope, types: tuple[str, ...]
) -> list[str]:
    missing: list[str] = []
    for docs in _pages(source, scope, types):
        found = {d.id for d in target.get_many(scope, [d.id for d in docs])}
        missing += [d.id for d in docs if d.id not in found]
    return missing


def _copy(
    source: MemoryBackend,
    target: MemoryBackend,
    scope: ReadScope,
    types: tuple[str, ...],
    report: MigrationReport,
) -> None:
    """Each page re-embedded (reads leave the vectors out) and written under its own id."""
    for docs in _pages(source, scope, types):
        texts = [
            embedding_text(d.memory_type, d.text, name=d.name, trigger=d.trigger) for d in docs
        ]
        vectors = embedder().embed(texts)
        target.write(
            [
                replace(d, embedding=[float(x) for x in v])
                for d, v in zip(docs, vectors, strict=True)
            ]
        )
        for d in docs:
            report.copied[d.memory_type] += 1


def _source(path: Path) -> MemoryBackend:
    if not path.is_file():
        raise ValidationError(f"No embedded store at {path}.", code="no_source")
    store = EmbeddedBackend(path=path, dims=embedder().dims)
    store.ensure_ready()
    return store


@dataclass
class MigrationPlan:
    """What a run would move, read before it starts (the confirmation page): documents per type
    in the source and how many of them the cluster holds already (an interrupted run's), the
    active users without a scoped key, and the tenant's mode now."""

    source: str
    target: str
    in_source: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MEMORY_TYPES, 0))
    on_target: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MEMORY_TYPES, 0))
    keyless_users: int = 0
    mode: str = ""

    @property
    def total(self) -> int:
        return sum(self.in_source.values())


def _require_elasticsearch() -> None:
    if settings.ATLAS_MEMORY_BACKEND != "elasticsearch":
        raise ValidationError(
            "Atlas is not running on Elasticsearch: set ATLAS_ES_URL (and ATLAS_MEMORY_BACKEND="
            "elasticsearch) first; the memories then move from the embedded file to it.",
            code="not_elasticsearch",
        )


def _keyless(tenant: Tenant) -> QuerySet[User]:
    return User.objects.filter(tenant=tenant, status=User.Status.ACTIVE).exclude(
        scoped_keys__status=ScopedKey.Status.ACTIVE
    )


def _cluster_address() -> str:
    """The cluster's address without any credentials in it."""
    url = urlsplit(str(settings.ATLAS_ES_URL))
    return f"Elasticsearch at {url.scheme}://{url.hostname}{f':{url.port}' if url.port else ''}"


def tenant_backend_migration_plan(*, tenant: Tenant, source_path: Path) -> MigrationPlan:
    """Count what ``tenant_backend_migrate`` would copy from ``source_path`` (read only: it
    writes nothing anywhere). Refused like the migration itself."""
    _require_elasticsearch()
    plan = MigrationPlan(source=f"embedded store {source_path}", target=_cluster_address())
    with store_errors():
        source, target = _source(source_path), backend()
        for _label, scope, types in _owners(tenant):
            for docs in _pages(source, scope, types):
                found = {d.id for d in target.get_many(scope, [d.id for d in docs])}
                for d in docs:
                    plan.in_source[d.memory_type] += 1
                    plan.on_target[d.memory_type] += d.id in found
    plan.keyless_users = _keyless(tenant).count()
    plan.mode = tenant.isolation_mode
    return plan


def tenant_backend_migrate(
    *,
    tenant: Tenant,
    source_path: Path,
    switch_mode: bool = True,
    progress: Callable[[str], None] = lambda _line: None,
) -> MigrationReport:
    """Copy the tenant's memories from the embedded store at ``source_path`` to the configured
    Elasticsearch backend, verify, provision missing keys and (``switch_mode``) switch the
    tenant to ``dls``. Safe to run again (see the module docstring)."""
    _require_elasticsearch()
    report = MigrationReport()
    with store_errors():
        source, target = _source(source_path), backend()
        for label, scope, types in _owners(tenant):
            if not _missing(source, target, scope, types):
                report.skipped_owners += 1
                progress(f"{label}: complete already")
                continue
            _copy(source, target, scope, types, report)
            target.sync()
            progress(f"{label}: copied")
        target.sync()
        for _label, scope, types in _owners(tenant):
            report.missing += _missing(source, target, scope, types)
    _provision_keys(tenant, report)
    if report.verified and switch_mode and not report.key_errors:
        tenant = tenant_isolation_set(tenant=tenant, mode=Tenant.IsolationMode.DLS)
    report.mode = Tenant.objects.get(pk=tenant.pk).isolation_mode
    with transaction.atomic():
        audit_record(
            action="tenant.backend_migrate",
            tenant=tenant,
            target=tenant,
            metadata={
                "copied": report.copied,
                "missing": len(report.missing),
                "keys_provisioned": report.keys_provisioned,
                "mode": report.mode,
            },
        )
    return report


def _provision_keys(tenant: Tenant, report: MigrationReport) -> None:
    for user in _keyless(tenant).select_related("tenant"):
        try:
            scoped_key_provision(user=user)
        except Exception as exc:
            logger.warning("key provisioning failed during a migration", extra={"user": user.pk})
            report.key_errors.append(f"{user.external_id}: {getattr(exc, 'message', 'failed')}")
        else:
            report.keys_provisioned += 1
