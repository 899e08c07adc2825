"""Tenant lifecycle: onboard (one step), update tunables, suspend, reactivate."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction

from atlas_platform.cluster import ApiKey, get_cluster
from atlas_platform.exceptions import Conflict, ValidationError
from tenants.models import EXTERNAL_ID_VALIDATOR, CatalogKey, Operator, ScopedKey, Tenant, User
from tenants.services.audit import audit_record
from tenants.services.catalog_keys import (
    catalog_key_current,
    catalog_key_provision,
    catalog_key_restore,
    catalog_key_row,
    catalog_keys_withdraw,
    create_catalog_cluster_key,
)
from tenants.services.scoped_keys import (
    create_cluster_key,
    key_row,
    scoped_keys_restore,
    scoped_keys_withdraw,
)
from tenants.services.users import check_new_account
from tenants.services.validation import validate

logger = logging.getLogger(__name__)

TUNABLE_FIELDS = (
    "name",
    "decay_offset_days",
    "decay_scale_days",
    "use_count_weight",
    "catalog_prior",
    "consolidation_every_n_episodes",
    "consolidation_daily",
    "consolidation_confidence_floor",
    "auto_provision_users",
    "erasure_requires_second_operator",
    "episode_retention_days",
    "audit_retention_days",
    "archive_after_days",
    "archive_retention_days",
)


@dataclass
class Onboarding:
    tenant: Tenant
    admin: AbstractBaseUser
    users: list[User] = field(default_factory=list)
    keys: list[ScopedKey] = field(default_factory=list)
    catalog_key: CatalogKey | None = None  # a cluster-enforced (dls) tenant's catalog reads


def check_external_ids(external_ids: Sequence[str]) -> list[str]:
    ids = [e.strip() for e in external_ids if e.strip()]
    dupes = sorted({e for e in ids if ids.count(e) > 1})
    if dupes:
        raise ValidationError(f"Duplicate user ids: {', '.join(dupes)}.", code="duplicate_user")
    for external_id in ids:
        try:
            EXTERNAL_ID_VALIDATOR(external_id)
        except DjangoValidationError as exc:
            raise ValidationError(f"User id {external_id!r}: {exc.messages[0]}") from exc
    return ids


def tenant_onboard(
    *,
    slug: str,
    name: str,
    admin_username: str,
    admin_password: str,
    admin_email: str = "",
    user_external_ids: Sequence[str] = (),
    statistics_scope: str = Tenant.StatisticsScope.TENANT,
    isolation_mode: str | None = None,
) -> Onboarding:
    """Create a tenant, its first tenant admin and its initial users (with scoped keys where a
    cluster exists; a cluster-enforced tenant also gets its catalog key). ``statistics_scope``:
    whose documents score a user's lexical recall (``Tenant.statistics_scope``); a tenant born
    with it has nothing to migrate, later changes take ``manage.py es_layout_migrate``.
    ``isolation_mode``: ``dls`` (needs a cluster with document-level security) or ``filter``;
    None: dls where the cluster offers it, else filter.

    All or nothing: if any step fails (a cluster key among them) nothing is kept and keys
    created so far are invalidated again. One audit event, ``tenant.onboard``.

    Transactions hold rows only: the rows are written first, the users' cluster keys are
    created outside any transaction, then the key rows and the audit event are written
    together. A failure after the first commit deletes what it wrote again.
    """
    tenant = Tenant(slug=slug.strip(), name=name.strip(), statistics_scope=statistics_scope)
    validate(tenant)
    ids = check_external_ids(user_external_ids)
    check_new_account(username=admin_username, password=admin_password)
    cluster = get_cluster()
    dls = cluster is not None and cluster.dls_available()
    if isolation_mode == Tenant.IsolationMode.DLS and not dls:
        raise ValidationError(
            "Cluster-enforced isolation (dls) needs a search cluster with document-level "
            "security; choose filter.",
            code="dls_unavailable",
        )
    if isolation_mode not in (None, *Tenant.IsolationMode.values):
        raise ValidationError(f"Unknown isolation mode {isolation_mode!r}.", code="bad_mode")
    if isolation_mode is not None:
        tenant.isolation_mode = isolation_mode
    elif dls:  # not chosen: the strongest the cluster offers
        tenant.isolation_mode = Tenant.IsolationMode.DLS
    with transaction.atomic():
        tenant.save()
        account = get_user_model().objects.create_user(
            username=admin_username, email=admin_email, password=admin_password, is_staff=True
        )
        Operator.objects.create(account=account, role=Operator.Role.TENANT_ADMIN, tenant=tenant)
        result = Onboarding(tenant=tenant, admin=account)
        result.users = [User.objects.create(tenant=tenant, external_id=x) for x in ids]
    created: list[ApiKey] = []
    catalog: ApiKey | None = None
    try:
        if cluster is not None:
            for user in result.users:
                created.append(create_cluster_key(cluster, user))
            if tenant.isolation_mode == Tenant.IsolationMode.DLS:
                catalog = create_catalog_cluster_key(cluster, tenant)
                created.append(catalog)
        with transaction.atomic():
            result.keys = [
                key_row(user=user, api_key=api_key)
                # none without a cluster; the catalog key, if any, comes after the users'
                for user, api_key in zip(result.users, created, strict=False)
            ]
            if catalog is not None:
                result.catalog_key = catalog_key_row(tenant=tenant, api_key=catalog)
            audit_record(
                action="tenant.onboard",
                tenant=tenant,
                target=tenant,
                metadata={
                    "slug": tenant.slug,
                    "isolation_mode": tenant.isolation_mode,
                    "statistics_scope": tenant.statistics_scope,
                    "admin": admin_username,
                    "users": ids,
                    "keys": [k.key_id for k in result.keys],
                    "catalog_key": catalog.id if catalog is not None else None,
                },
            )
    except Exception:
        for api_key in created:
            _invalidate_quietly(cluster, api_key.id)
        with transaction.atomic():  # no audit row was written yet: nothing else points here
            User.objects.filter(tenant=tenant).delete()
            Operator.objects.filter(tenant=tenant).delete()
            tenant.delete()
            account.delete()
        raise
    return result


def _invalidate_quietly(cluster: Any, key_id: str) -> None:
    try:
        cluster.invalidate_api_key(key_id)
    except Exception:
        logger.exception(
            "could not invalidate a key of a failed onboarding", extra={"key_id": key_id}
        )


def tenant_update(*, tenant: Tenant, **changes: Any) -> Tenant:
    """Change a tenant's name or ranking / rotation tunables."""
    unknown = set(changes) - set(TUNABLE_FIELDS)
    if unknown:
        raise ValidationError(f"Not changeable here: {', '.join(sorted(unknown))}.")
    before = {f: getattr(tenant, f) for f in changes}
    for attr, value in changes.items():
        setattr(tenant, attr, value)
    validate(tenant)
    changed = {
        f: [before[f], getattr(tenant, f)] for f in changes if before[f] != getattr(tenant, f)
    }
    if not changed:
        return tenant
    with transaction.atomic():
        tenant.save(update_fields=list(changed))
        audit_record(
            action="tenant.update", tenant=tenant, target=tenant, metadata={"changed": changed}
        )
    return tenant


def tenant_isolation_set(*, tenant: Tenant, mode: str) -> Tenant:
    """Switch a tenant's isolation mode. ``dls`` needs every active user to hold an active
    scoped key (reads fail closed without one), so it is refused until they do."""
    if mode not in Tenant.IsolationMode.values:
        raise ValidationError(f"Unknown isolation mode {mode!r}.", code="bad_mode")
    if mode == Tenant.IsolationMode.DLS:
        keyless = (
            User.objects.filter(tenant=tenant, status=User.Status.ACTIVE)
            .exclude(scoped_keys__status=ScopedKey.Status.ACTIVE)
            .values_list("external_id", flat=True)
        )
        if missing := sorted(keyless)[:10]:
            raise Conflict(
                f"Users without a scoped key: {', '.join(missing)}; provision their keys first.",
                code="keys_missing",
            )
        # Its catalog reads run with the catalog key: made first (a cluster call, before the
        # transaction); if the cluster refuses, the tenant stays as it is.
        if get_cluster() is not None and catalog_key_current(tenant=tenant) is None:
            catalog_key_provision(tenant=tenant)
    with transaction.atomic():
        tenant = Tenant.objects.select_for_update().get(pk=tenant.pk)
        before = tenant.isolation_mode
        if before == mode:
            return tenant
        tenant.isolation_mode = mode
        tenant.save(update_fields=["isolation_mode"])
        audit_record(
            action="tenant.isolation",
            tenant=tenant,
            target=tenant,
            metadata={"changed": {"isolation_mode": [before, mode]}},
        )
    if mode == Tenant.IsolationMode.FILTER:
        catalog_keys_withdraw(tenants=[tenant])  # read with the platform's credential now
    return tenant


def _set_status(tenant: Tenant, status: str, action: str) -> Tenant:
    with transaction.atomic():
        tenant = Tenant.objects.select_for_update().get(pk=tenant.pk)
        if tenant.status == status:
            raise Conflict(f"The tenant is already {status}.")
        tenant.status = status
        tenant.save(update_fields=["status"])
        audit_record(action=action, tenant=tenant, target=tenant)
    # After the commit: a suspended tenant's keys stop working on the cluster at once;
    # reactivating gives its active users new ones.
    users = list(User.objects.filter(tenant=tenant).select_related("tenant"))
    if status == Tenant.Status.SUSPENDED:
        scoped_keys_withdraw(users=users)
        catalog_keys_withdraw(tenants=[tenant])
    else:
        scoped_keys_restore(users=users)
        catalog_key_restore(tenant=tenant)
    return tenant


def tenant_suspend(*, tenant: Tenant) -> Tenant:
    """Suspend a tenant: its tokens are refused until it is reactivated."""
    return _set_status(tenant, Tenant.Status.SUSPENDED, "tenant.suspend")


def tenant_reactivate(*, tenant: Tenant) -> Tenant:
    return _set_status(tenant, Tenant.Status.ACTIVE, "tenant.reactivate")
