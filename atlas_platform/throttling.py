"""Per-token rate limits: one bucket per (token, scope), rates read from settings at call time.

Scopes: ``recall`` (ATLAS_RATE_RECALL), ``write`` (ATLAS_RATE_WRITE), ``read``
(ATLAS_RATE_READ), ``operations`` (ATLAS_RATE_OPERATIONS: batches of replayed operations, so a
backlog's replay does not spend the budget of interactive calls). Counters live in Django's
cache (``ATLAS_CACHE_URL``; per process with the local-memory default, so set a shared cache
such as Redis when running several processes).

A shared cache that fails or does not answer within its socket timeout
(``ATLAS_CACHE_TIMEOUT_S``) never fails a request: the check falls back to counters of this
process (the limit then holds per process, not across them), says so in the log (once per
``DEGRADED_FOR_S``) and in ``atlas_rate_limit_degraded_total``, and leaves the shared cache
alone for ``DEGRADED_FOR_S`` so a frozen cache costs one timeout, not one per request.
"""

from __future__ import annotations

import logging
import threading
import time
from types import SimpleNamespace
from typing import Any, cast

from django.conf import settings
from django.core.cache.backends.locmem import LocMemCache
from rest_framework.request import Request
from rest_framework.throttling import SimpleRateThrottle
from rest_framework.views import APIView

from atlas_platform import metrics

logger = logging.getLogger(__name__)
DEGRADED_FOR_S = 5.0

_local = LocMemCache("atlas-rate-limits", {"OPTIONS": {"MAX_ENTRIES": 100_000}})


class _SharedCacheHealth:
    """When the shared cache last failed: skipped until ``DEGRADED_FOR_S`` after that."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._skip_until = 0.0

    def usable(self) -> bool:
        return time.monotonic() >= self._skip_until

    def failed(self, exc: BaseException) -> None:
        with self._lock:
            first = time.monotonic() >= self._skip_until
            self._skip_until = time.monotonic() + DEGRADED_FOR_S
        metrics.DEGRADED.inc()
        metrics.dependency_error("cache")
        if first:
            logger.warning(
                "rate limits degraded to per-process counters: the shared cache failed",
                extra={"error": repr(exc), "for_s": DEGRADED_FOR_S},
            )


shared_cache_health = _SharedCacheHealth()


class TokenRateThrottle(SimpleRateThrottle):
    """Throttle by token id; the view names the scope with ``rate_scope(request)``."""

    def __init__(self) -> None:  # the rate depends on the view, so it is read per request
        pass

    def allow_request(self, request: Request, view: APIView) -> bool:
        scope_of = getattr(view, "rate_scope", None)
        self.scope = scope_of(request) if scope_of else "read"
        self.rate = self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)
        if shared_cache_health.usable():
            try:
                return super().allow_request(request, view)
            except Exception as exc:  # any cache backend's failure: degrade, never fail
                shared_cache_health.failed(exc)
        else:
            metrics.DEGRADED.inc()
        self.cache = _local
        return super().allow_request(request, view)

    def get_rate(self) -> str | None:
        return str(getattr(settings, f"ATLAS_RATE_{str(self.scope).upper()}"))

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        token_id = getattr(request.auth, "pk", None)
        if token_id is None:
            return None  # unauthenticated requests are refused before this runs
        return self.cache_format % {"scope": self.scope, "ident": token_id}


def token_rate_check(token_id: int, scope: str) -> float | None:
    """The same per-token limit outside DRF (the MCP endpoint): counts one call of ``scope``
    for the token; None when it may pass, else the seconds until the next one may."""
    throttle = TokenRateThrottle()
    request = cast(Request, SimpleNamespace(auth=SimpleNamespace(pk=token_id)))
    view = cast(APIView, SimpleNamespace(rate_scope=lambda _request: scope))
    if throttle.allow_request(request, view):
        return None
    return max(1.0, float(throttle.wait() or 1.0))
