"""Shared REST plumbing: the one error shape every endpoint answers with.

``{"error": {"code", "message", "details"?, "request_id"}}`` for every 4xx and 5xx: domain errors
and DRF's own (``exception_handler``), unknown paths (``not_found``), and anything else that
fails under ``/api/`` (``atlas_platform.middleware.ApiErrorMiddleware`` uses ``status_error``
and ``internal_error``). A body never carries a raw exception's text: a dependency failure shows
its class's fixed text (``AtlasError.public``), an unexpected error a fixed sentence and the
request id to quote.
"""

from __future__ import annotations

import logging
import math
from http import HTTPStatus
from typing import Any

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.defaults import page_not_found
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from atlas_platform.context import current_request_id
from atlas_platform.exceptions import AtlasError, Unavailable

logger = logging.getLogger(__name__)

INTERNAL_ERROR = "internal_error"
INTERNAL_MESSAGE = "Something went wrong on our side; quote the request id if you report it."
# Machine codes for errors that reach the caller as a bare status (no exception of ours).
STATUS_CODES = {
    400: "bad_request",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "request_too_large",
    415: "unsupported_media_type",
    429: "throttled",
    500: INTERNAL_ERROR,
    503: "unavailable",
}


def is_database_down(exc: BaseException) -> bool:
    """A database that cannot be reached or answer in time (not a query's own error)."""
    return isinstance(exc, (OperationalError, InterfaceError))


def is_api_path(path: str) -> bool:
    """Paths that answer errors in the shared JSON shape (the REST API and the MCP endpoint)."""
    return path.startswith("/api/") or path.rstrip("/") == "/mcp"


def error_body(code: str, message: str, details: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"error": {"code": code, "message": message}}
    if details:
        body["error"]["details"] = details
    body["error"]["request_id"] = current_request_id() or None
    return body


def atlas_error_body(exc: AtlasError) -> dict[str, Any]:
    """A domain error in the shared shape, with only what it may show (``AtlasError.public``)."""
    message, details = exc.public
    return error_body(exc.code, message, details)


def status_error(status: int) -> dict[str, Any]:
    """The shared shape for a bare HTTP status (Django refused the request, not a view)."""
    code = STATUS_CODES.get(status, INTERNAL_ERROR if status >= 500 else "error")
    message = INTERNAL_MESSAGE if status >= 500 else f"{HTTPStatus(status).phrase}."
    return error_body(code, message)


def internal_error() -> JsonResponse:
    """The 500 of an unexpected exception: a fixed sentence and the request id, nothing else."""
    return JsonResponse(error_body(INTERNAL_ERROR, INTERNAL_MESSAGE), status=500)


DATABASE_DOWN = "The database is unavailable; nothing was written. Retry later."


def retry_after(exc: AtlasError) -> dict[str, str]:
    """The ``Retry-After`` header of an error a retry may cure: a dependency down (503) or a
    claim still held (409 with ``retry_after``)."""
    seconds = exc.details.get("retry_after")
    if seconds is None and isinstance(exc, Unavailable):
        seconds = settings.ATLAS_RETRY_AFTER_S
    return {} if seconds is None else _retry_header(float(seconds))


def _retry_header(seconds: float) -> dict[str, str]:
    return {"Retry-After": str(max(1, math.ceil(seconds)))}


def database_unavailable() -> JsonResponse:
    """The JSON 503 of a database that cannot be reached (connect, pool or statement timeout)."""
    response = JsonResponse(error_body("database_unavailable", DATABASE_DOWN), status=503)
    for name, value in _retry_header(settings.ATLAS_RETRY_AFTER_S).items():
        response[name] = value
    return response


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Map domain errors and DRF errors to ``{"error": {"code", "message", ...}}``, a database
    that cannot be reached to a JSON 503; anything else is left to ``ApiErrorMiddleware``
    (logged, a JSON 500)."""
    if isinstance(exc, AtlasError):
        return Response(atlas_error_body(exc), status=exc.status_code, headers=retry_after(exc))
    if is_database_down(exc):
        logger.warning("database unavailable", extra={"error": repr(exc)})
        body = error_body("database_unavailable", DATABASE_DOWN)
        return Response(body, status=503, headers=_retry_header(settings.ATLAS_RETRY_AFTER_S))
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, drf_exceptions.ValidationError):
        response.data = error_body("invalid", "The request is not valid.", response.data)
    elif isinstance(exc, drf_exceptions.APIException):
        codes = exc.get_codes()
        code = codes if isinstance(codes, str) else "error"
        response.data = error_body(code, str(exc.detail))
    return response


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """``handler404``: the shared error shape for unknown paths under ``/api/``."""
    if is_api_path(request.path):
        return JsonResponse(error_body("not_found", "No such endpoint."), status=404)
    return page_not_found(request, exception)
