"""Response shapes of the tenants API (they feed the OpenAPI schema)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers


class TenantOut(serializers.Serializer[Any]):
    slug = serializers.CharField()
    name = serializers.CharField()


class TokenOut(serializers.Serializer[Any]):
    """What ``GET /api/v1/token`` says about the calling token."""

    name = serializers.CharField(help_text="The token's label.")
    tenant = TenantOut()
    scope = serializers.ChoiceField(
        choices=["user", "tenant"], help_text="user: one user; tenant: any user of the tenant."
    )
    user = serializers.CharField(allow_null=True, help_text="External id for a user token.")
    allow_catalog = serializers.BooleanField(help_text="May manage the tenant catalog.")
    expires_at = serializers.DateTimeField(allow_null=True)
    isolation_mode = serializers.CharField(help_text="dls | filter.")
