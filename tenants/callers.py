"""The caller rules the platform's REST bases and MCP host use (``atlas_platform.callers``):
tokens authenticate here, users are named through ``user_for_token`` and provisioned by a
first turn through ``user_for_first_turn``."""

from __future__ import annotations

from tenants.models import PlatformToken, User
from tenants.selectors import user_for_token
from tenants.services.tokens import token_authenticate
from tenants.services.users import user_awaits_provisioning, user_for_first_turn


class TenantCallers:
    def authenticate(self, *, raw: str) -> PlatformToken:
        return token_authenticate(raw=raw)

    def subject(self, *, token: PlatformToken, external_id: str, provisions: bool = False) -> User:
        resolve = user_for_first_turn if provisions else user_for_token
        return resolve(token=token, external_id=external_id)

    def awaits_provisioning(self, *, token: PlatformToken, external_id: str) -> bool:
        return user_awaits_provisioning(token=token, external_id=external_id)

    def own_user(self, *, token: PlatformToken) -> str | None:
        return token.user.external_id if token.user is not None else None

    def label(self, *, token: PlatformToken) -> tuple[str, str]:
        return str(token.pk), token.name
