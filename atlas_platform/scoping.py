"""What a caller may touch: one queryset every caller-owned model of the apps above uses.

A model names the path from its rows to the user who owns them (``owner = "user"``,
``"agent__user"``) and takes ``objects = CallerQuerySet.as_manager()``;
``Model.objects.for_caller(user)`` is then every row
of that user, and ``.in_callers_tenant(user)`` every row of the user's tenant (what a
team-visible read may add). The selectors and services of every REST view and MCP tool read
through these methods, so the rule lives here once and a new model says only where its owner
is. ``missing`` is the one refusal for a row the caller may not reach: a 404 that reads the
same whether the row belongs to someone else or does not exist, so ids do not leak.
"""

from __future__ import annotations

from typing import Any, Protocol, Self, TypeVar

from django.db import models

from atlas_platform.exceptions import NotFound


class Caller(Protocol):
    """Who a request acts for: a user (``pk``) of a tenant (``tenant_id``)."""

    @property
    def pk(self) -> Any: ...

    @property
    def tenant_id(self) -> int: ...


M = TypeVar("M", bound=models.Model)


class CallerQuerySet(models.QuerySet[M]):
    """Rows scoped from the caller (the model's ``owner`` path names the owning user)."""

    def _owner(self) -> str:
        owner = getattr(self.model, "owner", None)
        if not isinstance(owner, str):
            raise TypeError(f"{self.model.__name__} must name its owner path (owner = 'user').")
        return owner

    def for_caller(self, caller: Caller) -> Self:
        """The caller's own rows."""
        return self.filter(**{f"{self._owner()}_id": caller.pk})

    def in_callers_tenant(self, caller: Caller) -> Self:
        """Rows of any user of the caller's tenant (for reads a tenant shares)."""
        return self.filter(**{f"{self._owner()}__tenant_id": caller.tenant_id})


def missing(kind: str, ident: object, where: str = "for this user") -> NotFound:
    """The refusal of a row the caller may not reach (or that does not exist): 404
    ``<kind>_not_found``, "No <kind> <id> <where>." (the same words either way)."""
    label = kind.replace("_", " ")
    return NotFound(f"No {label} {ident!r} {where}.", code=f"{kind}_not_found")
