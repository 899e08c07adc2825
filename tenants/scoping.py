"""The one place that decides which tenants an operator may see and act on.

Every admin page goes through ``OperatorScope.restrict``; a new page that forgets it fails the
scoping tests, because the base admin class applies it and refuses pages that opt out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from django.db.models import Model, QuerySet
from django.http import HttpRequest

from tenants.models import Operator, Tenant

M = TypeVar("M", bound=Model)


@dataclass(frozen=True)
class OperatorScope:
    """An operator's reach: every tenant (platform admin) or one tenant, read-write or read-only."""

    role: str
    tenant_id: int | None

    @property
    def is_platform_admin(self) -> bool:
        return self.role == Operator.Role.PLATFORM_ADMIN

    @property
    def can_act(self) -> bool:
        return self.role in (Operator.Role.PLATFORM_ADMIN, Operator.Role.TENANT_ADMIN)

    def restrict(self, queryset: QuerySet[M], tenant_path: str) -> QuerySet[M]:
        """Rows whose tenant, reached by ``tenant_path`` (``"tenant"``, ``"user__tenant"``, or
        ``""`` for Tenant itself), is in reach."""
        if self.is_platform_admin:
            return queryset
        lookup = f"{tenant_path}__pk" if tenant_path else "pk"
        return queryset.filter(**{lookup: self.tenant_id})

    def covers(self, tenant: Tenant | int | None) -> bool:
        if self.is_platform_admin:
            return True
        tenant_id = tenant.pk if isinstance(tenant, Tenant) else tenant
        return tenant_id is not None and tenant_id == self.tenant_id

    def tenants(self) -> QuerySet[Tenant]:
        return self.restrict(Tenant.objects.all(), "")


NO_SCOPE = None


def scope_for(account: Any) -> OperatorScope | None:
    """The scope of a signed-in account; None when it is no Atlas operator (sees nothing)."""
    if account is None or not account.is_authenticated or not account.is_active:
        return NO_SCOPE
    operator = Operator.objects.filter(account=account).first()
    if operator is None:
        if account.is_superuser:
            return OperatorScope(Operator.Role.PLATFORM_ADMIN, None)
        return NO_SCOPE
    return OperatorScope(operator.role, operator.tenant_id)


def request_scope(request: HttpRequest) -> OperatorScope | None:
    """The scope of the request's operator, computed once per request."""
    cached: OperatorScope | None = getattr(request, "_atlas_scope", None)
    if cached is None:
        cached = scope_for(getattr(request, "user", None))
        request._atlas_scope = cached  # type: ignore[attr-defined]
    return cached
