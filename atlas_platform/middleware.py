"""Request id and acting-operator middleware."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from atlas_platform.context import Actor, actor_var, request_id_var

REQUEST_ID_HEADER = "X-Request-ID"
_VALID_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{8,64}$")


def choose_request_id(incoming: str) -> str:
    """The caller's request id if it is well formed, else a fresh one."""
    return incoming if _VALID_REQUEST_ID.match(incoming) else uuid.uuid4().hex


class RequestIdMiddleware:
    """Give every request an id (the caller's, if well formed) and echo it in the response."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        rid = choose_request_id(request.headers.get(REQUEST_ID_HEADER, ""))
        request.request_id = rid  # type: ignore[attr-defined]
        token = request_id_var.set(rid)
        try:
            response = self.get_response(request)
        finally:
            request_id_var.reset(token)
        response[REQUEST_ID_HEADER] = rid
        return response


class OperatorActorMiddleware:
    """Attribute admin-site changes to the signed-in operator."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        account = getattr(request, "user", None)
        if account is None or not account.is_authenticated:
            return self.get_response(request)
        actor = Actor(type="operator", id=str(account.pk), label=account.get_username())
        token = actor_var.set(actor)
        try:
            return self.get_response(request)
        finally:
            actor_var.reset(token)
