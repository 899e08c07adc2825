"""The one family of domain errors. The API layer maps each to a status code and a machine code.

Every error Atlas raises on purpose is an ``AtlasError``: the services' rule violations (4xx) and
every adapter's failure (``Unavailable``, 503: the search cluster, the embedding model, the
reranker, the chat model), so a caller never sees a client library's exception.

A 4xx message is written for the caller and is shown as is. A dependency failure's message may
quote the dependency (its error text, a refused document): it goes to the log, and callers see
the class's ``public_message`` instead (``AtlasError.public``).
"""

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

    @property
    def public(self) -> tuple[str, dict[str, Any]]:
        """(message, details) fit for a response body: this error's own for a 4xx."""
        return self.message, self.details


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


class Throttled(AtlasError):
    """Past a per-token rate limit (``retry_after``: seconds until the next call may pass)."""

    status_code = 429
    code = "throttled"


class Unavailable(AtlasError):
    """A dependency (the search cluster, a model, the broker) failed or could not be reached.
    Every adapter's own error is one of these, so a caller never sees a client library's."""

    status_code = 503
    code = "unavailable"
    public_message = "A service Atlas depends on is unavailable; nothing was written. Retry later."

    @property
    def public(self) -> tuple[str, dict[str, Any]]:
        """The class's fixed text, no details: the dependency's own words stay in the log."""
        return self.public_message, {}


class ClusterUnavailable(Unavailable):
    """The search cluster could not be reached or refused the call."""

    status_code = 503
    code = "cluster_unavailable"
    public_message = "The search cluster is unavailable; nothing was changed. Retry later."
