"""``/api/v1/users/{user_id}/forget-requests``: open an erasure request, read its status and
receipt. A user token acts for its own user; a tenant token for any user of its tenant."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from atlas_platform.openapi import IDEMPOTENCY_KEY, READ_ERRORS, USER_ID, WRITE_ERRORS, errors
from atlas_platform.views import UserView, parsed
from erasure.api import serializers as s
from erasure.selectors import forget_request_for_user, forget_requests_for_user
from erasure.services import forget_request_open


class ForgetRequestsView(UserView):
    @extend_schema(
        operation_id="forget_request_list",
        tags=["erasure"],
        responses={200: s.ForgetRequestPageOut, **errors(*READ_ERRORS)},
        parameters=[USER_ID, s.ForgetRequestListIn],
    )
    def get(self, request: Request, user_id: str) -> Response:
        """The user's forget requests, newest first, a page at a time (cursor in `next`)."""
        query = parsed(s.ForgetRequestListIn, request.GET)
        page, more = forget_requests_for_user(user=self.subject, **query)
        return Response({"results": s.ForgetRequestOut(page, many=True).data, "next": more})

    @extend_schema(
        operation_id="forget_request_open",
        tags=["erasure"],
        request=s.ForgetRequestIn,
        responses={201: s.ForgetRequestOut, **errors(*WRITE_ERRORS)},
        parameters=[USER_ID, IDEMPOTENCY_KEY],
    )
    def post(self, request: Request, user_id: str) -> Response:
        """Ask for some or all of the user's memories to be erased. Nothing is deleted until
        an operator of the tenant approves the request; poll it for the status and receipt."""
        opened = forget_request_open(
            user=self.subject, by=self.token, **parsed(s.ForgetRequestIn, request.data)
        )
        return Response(s.ForgetRequestOut(opened).data, status=status.HTTP_201_CREATED)


class ForgetRequestView(UserView):
    @extend_schema(
        operation_id="forget_request_get",
        tags=["erasure"],
        responses={200: s.ForgetRequestOut, **errors(*READ_ERRORS)},
        parameters=[USER_ID],
    )
    def get(self, request: Request, user_id: str, request_id: int) -> Response:
        """A forget request of this user: status, per-index progress and, once done, the
        receipt."""
        found = forget_request_for_user(user=self.subject, request_id=request_id)
        return Response(s.ForgetRequestOut(found).data)
