"""Response shapes of the tenants API (they feed the OpenAPI schema)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from atlas_platform.serializers import StrictCharField


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
    agent = serializers.CharField(
        allow_null=True,
        help_text="The agent a user token is bound to (it acts as that agent), else null.",
    )
    allow_catalog = serializers.BooleanField(help_text="May manage the tenant catalog.")
    allow_provisioning = serializers.BooleanField(help_text="May provision users (/users).")
    allow_export = serializers.BooleanField(
        help_text="May export any user of the tenant (/users/{id}/export); a user token "
        "exports its own user whatever this says."
    )
    expires_at = serializers.DateTimeField(allow_null=True)
    isolation_mode = serializers.CharField(help_text="dls | filter.")


class KeyOut(serializers.Serializer[Any]):
    state = serializers.ChoiceField(
        choices=["active", "stale", "missing", "pending_invalidation"],
        help_text="The user's scoped cluster key (missing: none, as on an embedded tenant).",
    )
    key_id = serializers.CharField(allow_null=True, help_text="The cluster's id of the key.")


class UserOut(serializers.Serializer[Any]):
    """A user (memory subject) of the tenant, named by the caller's own id."""

    external_id = serializers.CharField(help_text="Your system's id for the user.")
    display_name = serializers.CharField(allow_blank=True)
    status = serializers.ChoiceField(choices=["active", "disabled"])
    created_at = serializers.DateTimeField()
    key = KeyOut()


class UserProvisionedOut(UserOut):
    key_error = serializers.CharField(
        allow_null=True,
        help_text="Why the scoped key could not be made (the user was; provision it later).",
    )


class UserPageOut(serializers.Serializer[Any]):
    results = UserOut(many=True)
    next = serializers.CharField(
        allow_null=True, help_text="Cursor for `after` to get the next page; null at the end."
    )


class UserIn(serializers.Serializer[Any]):
    external_id = StrictCharField(
        max_length=128, help_text="Your system's id for the user (letters, digits, . _ @ : -)."
    )
    display_name = StrictCharField(
        required=False,
        default="",
        allow_blank=True,
        max_length=200,
        help_text="Shown to operators.",
    )
    provision_key = serializers.BooleanField(
        required=False,
        allow_null=True,
        default=None,
        help_text="Make the user's scoped cluster key now (default: on a dls tenant only).",
    )


class UserListIn(serializers.Serializer[Any]):
    status = serializers.ChoiceField(
        choices=["active", "disabled"], required=False, help_text="Only users in this status."
    )
    after = StrictCharField(
        required=False, max_length=128, help_text="Cursor from the previous page's `next`."
    )
    limit = serializers.IntegerField(
        required=False, default=50, min_value=1, max_value=200, help_text="Page size."
    )
