"""Request id, JSON errors under ``/api/``, and acting-operator middleware."""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable

from django.core.exceptions import BadRequest, PermissionDenied, SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.http.multipartparser import MultiPartParserError

from atlas_platform import metrics
from atlas_platform.api import (
    database_unavailable,
    internal_error,
    is_api_path,
    is_database_down,
    status_error,
)
from atlas_platform.context import SYSTEM, Actor, actor_var, request_id_var

REQUEST_ID_HEADER = "X-Request-ID"
_VALID_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{8,64}$")
logger = logging.getLogger(__name__)
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
# What Django answers with a 4xx itself (then made JSON by ``ApiErrorMiddleware.__call__``).
_DJANGO_4XX = (Http404, PermissionDenied, BadRequest, SuspiciousOperation, MultiPartParserError)


def choose_request_id(incoming: str) -> str:
    """The caller's request id if it is well formed, else a fresh one."""
    return incoming if _VALID_REQUEST_ID.match(incoming) else uuid.uuid4().hex


class MetricsMiddleware:
    """Count every request and time it, by route pattern (not path: ids stay out of the
    labels), method and status (``atlas_platform.metrics``)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        status = "500"
        try:
            response = self.get_response(request)
            status = str(response.status_code)
            return response
        finally:
            match = getattr(request, "resolver_match", None)
            route = f"/{match.route}" if match is not None and match.route else "unmatched"
            method = request.method if request.method in _METHODS else "other"
            labels = {"route": route, "method": method, "status": status}
            metrics.REQUESTS.labels(**labels).inc()
            metrics.LATENCY.labels(**labels).observe(time.perf_counter() - started)


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


class ApiErrorMiddleware:
    """Every 4xx / 5xx under ``/api/`` is JSON in the shared error shape.

    An exception no view handled is logged with its traceback and answered with a JSON 500
    (the request id, never the exception's text), instead of Django's HTML page. A response
    that Django itself made for a refused request (its HTML 400, 403, 404, 413, 500 pages) is
    replaced by the shared shape for its status. Sits inside ``RequestIdMiddleware``, so the
    body and the log line carry the request id.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not is_api_path(request.path) or response.status_code < 400:
            return response
        if response.get("Content-Type", "").startswith("application/json"):
            return response
        return JsonResponse(status_error(response.status_code), status=response.status_code)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not is_api_path(request.path) or isinstance(exception, _DJANGO_4XX):
            return None  # Django's own handling (the admin's error pages, its 4xx)
        if is_database_down(exception):
            logger.warning("database unavailable", extra={"error": repr(exception)})
            return database_unavailable()
        logger.error(
            "unhandled error in %s %s",
            request.method,
            request.path,
            exc_info=(type(exception), exception, exception.__traceback__),
        )
        return internal_error()


class OperatorActorMiddleware:
    """The one caller context of a request: the signed-in operator on admin pages, else the
    system until an entry point (REST token authentication) names its caller; reset when the
    request ends, whatever was set during it, so a serving thread never carries one request's
    actor into the next one's audit rows."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        account = getattr(request, "user", None)
        actor = SYSTEM
        if account is not None and account.is_authenticated:
            actor = Actor(type="operator", id=str(account.pk), label=account.get_username())
        token = actor_var.set(actor)
        try:
            return self.get_response(request)
        finally:
            actor_var.reset(token)
