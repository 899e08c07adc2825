"""Token introspection: who am I."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.exceptions import NotAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from atlas_platform.openapi import errors
from tenants.api.serializers import TokenOut
from tenants.models import PlatformToken


class TokenView(APIView):
    """``GET /api/v1/token``: the calling token's tenant, scope and expiry."""

    @extend_schema(tags=["token"], responses={200: TokenOut, **errors(401)})
    def get(self, request: Request) -> Response:
        """Who the calling token is: tenant, scope (user or tenant), the agent it is bound to,
        catalog rights, expiry."""
        token = request.auth
        if not isinstance(token, PlatformToken):  # only token authentication is configured
            raise NotAuthenticated()
        return Response(
            {
                "name": token.name,
                "tenant": {"slug": token.tenant.slug, "name": token.tenant.name},
                "scope": token.scope,
                "user": token.user.external_id if token.user else None,
                "agent": token.agent_slug or None,
                "allow_catalog": token.allow_catalog,
                "allow_provisioning": token.allow_provisioning,
                "allow_export": token.allow_export,
                "expires_at": token.expires_at,
                "isolation_mode": token.tenant.isolation_mode,
            }
        )
