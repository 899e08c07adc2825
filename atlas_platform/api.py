"""Shared REST plumbing: the one error shape every endpoint answers with."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.defaults import page_not_found
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from atlas_platform.context import current_request_id
from atlas_platform.exceptions import AtlasError


def error_body(code: str, message: str, details: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"error": {"code": code, "message": message}}
    if details:
        body["error"]["details"] = details
    body["error"]["request_id"] = current_request_id() or None
    return body


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Map domain errors and DRF errors to ``{"error": {"code", "message", ...}}``."""
    if isinstance(exc, AtlasError):
        return Response(error_body(exc.code, exc.message, exc.details), status=exc.status_code)
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
    if request.path.startswith("/api/"):
        return JsonResponse(error_body("not_found", "No such endpoint."), status=404)
    return page_not_found(request, exception)
