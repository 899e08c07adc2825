"""API bases that know the platform token: the calling token, and the user it may act for."""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions

from atlas_platform.views import ApiView
from tenants.models import PlatformToken, User
from tenants.selectors import user_for_token
from tenants.services.users import user_for_first_turn


class TokenApiView(ApiView):
    """An endpoint called with a platform token (``self.token``)."""

    @property
    def token(self) -> PlatformToken:
        token = self.request.auth
        if not isinstance(token, PlatformToken):  # only token authentication is configured
            raise exceptions.NotAuthenticated()
        return token


class UserApiView(TokenApiView):
    """``/users/{user_id}/...``: ``self.subject`` is the user the token may act for, resolved
    before any handler runs (404 for another tenant's or another user's id)."""

    subject: User
    # True on the endpoint that starts a conversation (a turn): an unknown user is provisioned
    # first where the tenant turned on auto-provisioning (``user_for_first_turn``).
    provisions_unknown_user = False

    def resolve(self, **kwargs: Any) -> None:
        if self.provisions_unknown_user:
            self.subject = user_for_first_turn(token=self.token, external_id=kwargs["user_id"])
        else:
            self.subject = user_for_token(token=self.token, external_id=kwargs["user_id"])
