"""``/api/v1/users``: user provisioning for tenant tokens with the provisioning right: create
(with the scoped key, as the admin does), list, read, disable and enable again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from atlas_platform.openapi import READ_ERRORS, USER_ID, WRITE_ERRORS, errors
from atlas_platform.views import TokenApiView, parsed
from tenants.api import serializers as s
from tenants.capabilities import Capability, requires
from tenants.models import User
from tenants.selectors import tenant_user, user_key_status, user_page
from tenants.services.users import user_provision, user_set_status

F = TypeVar("F", bound=Callable[..., Any])


def user_data(user: User, **extra: Any) -> dict[str, Any]:
    key = user_key_status(user=user)
    return {
        "external_id": user.external_id,
        "display_name": user.display_name,
        "status": user.status,
        "created_at": user.created_at,
        "key": {"state": key.state, "key_id": key.key_id},
        **extra,
    }


class ProvisioningView(TokenApiView):
    permission_classes = [IsAuthenticated, requires(Capability.PROVISIONING)]

    def named_user(self, external_id: str) -> User:
        """The token's tenant's user by external id, in any status (404 otherwise)."""
        return tenant_user(tenant_id=self.token.tenant_id, external_id=external_id)


class UsersView(ProvisioningView):
    @extend_schema(
        operation_id="user_list",
        tags=["users"],
        parameters=[s.UserListIn],
        responses={200: s.UserPageOut, **errors(*READ_ERRORS, 403)},
    )
    def get(self, request: Request) -> Response:
        """The tenant's users in external-id order, a page at a time (cursor in `next`)."""
        page = user_page(tenant=self.token.tenant, **parsed(s.UserListIn, request.GET))
        return Response({"results": [user_data(u) for u in page.users], "next": page.next_cursor})

    @extend_schema(
        operation_id="user_create",
        tags=["users"],
        request=s.UserIn,
        responses={201: s.UserProvisionedOut, **errors(*WRITE_ERRORS, 403)},
    )
    def post(self, request: Request) -> Response:
        """Create a user; on a cluster-enforced (dls) tenant also their scoped key. A key the
        cluster refused is named in `key_error` (the user exists; 201 all the same)."""
        made = user_provision(tenant=self.token.tenant, **parsed(s.UserIn, request.data))
        body = user_data(made.user, key_error=made.key_error)
        return Response(body, status=status.HTTP_201_CREATED)


class UserDetailView(ProvisioningView):
    @extend_schema(
        operation_id="user_get",
        tags=["users"],
        parameters=[USER_ID],
        responses={200: s.UserOut, **errors(*READ_ERRORS, 403)},
    )
    def get(self, request: Request, user_id: str) -> Response:
        """One user of the tenant, in any status."""
        return Response(user_data(self.named_user(user_id)))


def _status_schema(operation_id: str) -> Callable[[F], F]:
    return extend_schema(
        operation_id=operation_id,
        tags=["users"],
        request=None,
        parameters=[USER_ID],
        responses={200: s.UserOut, **errors(*WRITE_ERRORS, 403)},
    )


class UserDisableView(ProvisioningView):
    @_status_schema("user_disable")
    def post(self, request: Request, user_id: str) -> Response:
        """Disable the user: every call for them is refused with `user_disabled` (403) and
        their memories stay. 409 if they already are."""
        user = user_set_status(user=self.named_user(user_id), status=User.Status.DISABLED)
        return Response(user_data(user))


class UserEnableView(ProvisioningView):
    @_status_schema("user_enable")
    def post(self, request: Request, user_id: str) -> Response:
        """Enable a disabled user again. 409 if they are active."""
        user = user_set_status(user=self.named_user(user_id), status=User.Status.ACTIVE)
        return Response(user_data(user))
