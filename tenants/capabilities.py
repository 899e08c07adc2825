"""What a token may do beyond acting for its user: the one check every REST view and MCP tool
makes, with one refusal per capability (the same status, code and words wherever it is made).

- ``catalog``: read and write the tenant catalog (a tenant-wide token issued with catalog rights);
- ``provisioning``: create users (and a first turn's auto-provisioning) and issue agent-bound
  tokens (a tenant-wide token issued with the provisioning right);
- ``agent``: act as an agent (a token bound to one of the user's agents).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from atlas_platform.exceptions import PermissionDenied
from tenants.models import PlatformToken, User


class Capability(StrEnum):
    CATALOG = "catalog"
    PROVISIONING = "provisioning"
    AGENT = "agent"


REFUSALS: dict[Capability, tuple[str, str]] = {
    Capability.CATALOG: (
        "catalog_not_allowed",
        "The catalog needs a tenant-wide token issued with catalog rights.",
    ),
    Capability.PROVISIONING: (
        "provisioning_not_allowed",
        "Provisioning users and issuing agent tokens need a tenant-wide token issued with the "
        "provisioning right (admin: Platform tokens > add > Allow provisioning); or ask an "
        "admin: the user's page, 'Issue an agent-bound token'.",
    ),
    Capability.AGENT: (
        "token_not_bound_to_agent",
        "This token is not bound to an agent; issue one for the agent.",
    ),
}


def token_can(*, token: PlatformToken, capability: Capability, user: User | None = None) -> bool:
    """Whether ``token`` has ``capability`` (``agent``: bound to an agent of ``user``)."""
    if capability is Capability.AGENT:
        return bool(token.agent_slug) and (user is None or token.user_id == user.pk)
    tenant_wide = token.user_id is None
    if capability is Capability.CATALOG:
        return tenant_wide and token.allow_catalog
    return tenant_wide and token.allow_provisioning


def capability_require(
    *, token: PlatformToken, capability: Capability, user: User | None = None
) -> None:
    """Refuse (403, the capability's code and message) a token without ``capability``."""
    if not token_can(token=token, capability=capability, user=user):
        code, message = REFUSALS[capability]
        raise PermissionDenied(message, code=code)


def requires(capability: Capability) -> type[BasePermission]:
    """A DRF permission class for endpoints that need ``capability`` (refused as above)."""

    class Requires(BasePermission):
        def has_permission(self, request: Request, view: Any) -> bool:
            token = request.auth
            if not isinstance(token, PlatformToken):  # not authenticated: DRF answers 401
                return False
            capability_require(token=token, capability=capability)
            return True

    Requires.__name__ = f"Requires{capability.name.title()}"
    return Requires
