"""DRF authentication by platform token (``Authorization: Bearer atlas_...``)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from atlas_platform.context import Actor, actor_var
from atlas_platform.exceptions import AuthenticationFailed
from tenants.models import PlatformToken
from tenants.services.tokens import token_authenticate


class TokenPrincipal:
    """``request.user`` for token requests: the token, never a Django account."""

    is_authenticated = True
    is_anonymous = False

    def __init__(self, token: PlatformToken) -> None:
        self.token = token

    def __str__(self) -> str:
        return f"token:{self.token.lookup}"


class PlatformTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[TokenPrincipal, PlatformToken] | None:
        header = request.headers.get("Authorization", "")
        if not header:
            return None
        scheme, _, raw = header.partition(" ")
        if scheme.lower() != self.keyword.lower() or not raw.strip():  # RFC 9110: any case
            raise exceptions.AuthenticationFailed("Use 'Authorization: Bearer <token>'.")
        try:
            token = token_authenticate(raw=raw.strip())
        except AuthenticationFailed as exc:
            raise exceptions.AuthenticationFailed(exc.message, code=exc.code) from exc
        actor_var.set(Actor(type="token", id=str(token.pk), label=token.name))
        return TokenPrincipal(token), token

    def authenticate_header(self, request: Any) -> str:
        return self.keyword


class PlatformTokenScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    """``Authorization: Bearer atlas_<lookup>_<secret>`` (a platform token)."""

    target_class = "tenants.api.authentication.PlatformTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "atlas_<lookup>_<secret>",
            "description": "A platform token issued in the admin (shown once).",
        }
