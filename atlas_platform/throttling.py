"""Per-token rate limits: one bucket per (token, scope), rates read from settings at call time.

Scopes: ``recall`` (ATLAS_RATE_RECALL), ``write`` (ATLAS_RATE_WRITE), ``read``
(ATLAS_RATE_READ). Counters live in Django's cache (``ATLAS_CACHE_URL``; per process with the
local-memory default, so set a shared cache such as Redis when running several processes).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle
from rest_framework.views import APIView


class TokenRateThrottle(SimpleRateThrottle):
    """Throttle by token id; the view names the scope with ``rate_scope(request)``."""

    def __init__(self) -> None:  # the rate depends on the view, so it is read per request
        pass

    def allow_request(self, request: Request, view: APIView) -> bool:
        scope_of = getattr(view, "rate_scope", None)
        self.scope = scope_of(request) if scope_of else "read"
        self.rate = self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)
        return super().allow_request(request, view)

    def get_rate(self) -> str | None:
        return str(getattr(settings, f"ATLAS_RATE_{str(self.scope).upper()}"))

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        token_id = getattr(request.auth, "pk", None)
        if token_id is None:
            return None  # unauthenticated requests are refused before this runs
        return self.cache_format % {"scope": self.scope, "ident": token_id}
