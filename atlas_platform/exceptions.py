"""The one family of domain errors. The API layer maps each to a status code and a machine code."""

from __future__ import annotations

from typing import Any


class AtlasError(Exception):
    """Base of every domain error: a machine ``code``, a human ``message``, an HTTP status."""

    status_code = 400
    code = "invalid"

    def __init__(self, message: str, *, code: str | None = None, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.details = details


class ValidationError(AtlasError):
    status_code = 400
    code = "invalid"


class AuthenticationFailed(AtlasError):
    status_code = 401
    code = "unauthenticated"


class PermissionDenied(AtlasError):
    status_code = 403
    code = "forbidden"


class NotFound(AtlasError):
    status_code = 404
    code = "not_found"


class Conflict(AtlasError):
    status_code = 409
    code = "conflict"


class Unavailable(AtlasError):
    """A dependency (the search cluster, a model, the broker) failed or could not be reached.
    Every adapter's own error is one of these, so a caller never sees a client library's."""

    status_code = 503
    code = "unavailable"


class ClusterUnavailable(Unavailable):
    """The search cluster could not be reached or refused the call."""

    status_code = 503
    code = "cluster_unavailable"
