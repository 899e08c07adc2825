"""API bases that know the platform token: the calling token, and the user it may act for."""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions

from atlas_platform.views import ApiView
from tenants.models import PlatformToken, User
from tenants.selectors import user_for_token


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

    def resolve(self, **kwargs: Any) -> None:
        self.subject = user_for_token(token=self.token, external_id=kwargs["user_id"])
