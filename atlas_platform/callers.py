"""Who a request acts for, as the platform's REST bases and MCP host ask it.

The rules (tokens, users, auto-provisioning) are the tenants app's; it registers them at
start-up (``register_callers``, from ``TenantsConfig.ready``), so the platform's plumbing never
imports an app above it. Every REST view (``atlas_platform.views``) and every MCP request
(``atlas_platform.mcp``) resolves its token and user through ``callers()``: one rule for both.
"""

from __future__ import annotations

from typing import Any, Protocol

from django.core.exceptions import ImproperlyConfigured


class Callers(Protocol):
    """The rules a caller is resolved by (each raises the platform's ``AtlasError``s)."""

    def authenticate(self, *, raw: str) -> Any:
        """The live token a raw bearer secret is (401 otherwise)."""

    def subject(self, *, token: Any, external_id: str, provisions: bool = False) -> Any:
        """The user ``token`` names by ``external_id`` (404 across users and tenants; with
        ``provisions``, one a first turn may create is created first)."""

    def awaits_provisioning(self, *, token: Any, external_id: str) -> bool:
        """Whether ``external_id`` is nobody yet whom a first turn with ``token`` would
        provision."""

    def own_user(self, *, token: Any) -> str | None:
        """The external id of the one user a user-scoped token acts for (None: tenant-wide)."""

    def label(self, *, token: Any) -> tuple[str, str]:
        """The token's (id, name) for the acting identity of audit and logs."""


_registered: list[Callers] = []


def register_callers(rules: Callers) -> None:
    """Install the rules (once per process; a second registration replaces the first)."""
    _registered[:] = [rules]


def callers() -> Callers:
    if not _registered:
        raise ImproperlyConfigured("No caller rules registered: is 'tenants' installed?")
    return _registered[0]
