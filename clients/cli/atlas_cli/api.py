"""HTTP to the Atlas server with urllib: JSON in and out, a bearer token, a timeout on every
call. ``Offline`` when the server cannot be reached or did not answer in time (``sent`` says
whether the request may have reached it); ``HttpError`` for an answer that is not a 2xx.
Every body and query leaves without its ``<private>`` spans (``atlas_cli.private``).

``urllib.request`` (with ``http.client``, ``email`` and ``ssl``: ~25 ms of a ~0.2 s command)
is imported on the first request only: a command that sends nothing never pays for it."""

from __future__ import annotations

import json
import socket
import urllib.parse
from typing import Any

from atlas_cli import __version__
from atlas_cli.config import Profile
from atlas_cli.private import redact


class Offline(Exception):
    def __init__(self, message: str, *, sent: bool = False) -> None:
        super().__init__(message)
        self.sent = sent


class HttpError(Exception):
    def __init__(self, status: int, body: Any, *, retry_after: float | None = None) -> None:
        self.status = status
        self.retry_after = retry_after  # seconds, from a 429's or 503's Retry-After
        self.body: dict[str, Any] = body if isinstance(body, dict) else {}
        found = self.body.get("error")
        error: dict[str, Any] = found if isinstance(found, dict) else {}
        self.code = str(error.get("code", f"http_{status}"))
        self.message = str(error.get("message", f"HTTP {status}"))
        self.details = error.get("details") or error.get("fields") or {}
        super().__init__(f"{status} {self.code}: {self.message}")


class Client:
    def __init__(self, profile: Profile, *, timeout: float = 10.0) -> None:
        self.profile = profile
        self.timeout = timeout

    def user_path(self, rest: str) -> str:
        return f"users/{urllib.parse.quote(self.profile.user, safe='')}/{rest}"

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: dict[str, Any] | None = None,
        timeout: float | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        url = f"{self.profile.url}/api/v1/{path}"
        if query:
            pairs = {k: _q(redact(v)) for k, v in query.items() if v is not None}
            url += "?" + urllib.parse.urlencode(pairs)
        return self.fetch(method, url, body, timeout=timeout, headers=headers)

    def health(self, *, timeout: float | None = None) -> Any:
        """The server's liveness (``GET /healthz``, beside the API, not under it)."""
        return self.fetch("GET", f"{self.profile.url}/healthz", timeout=timeout)

    def fetch(
        self,
        method: str,
        url: str,
        body: Any = None,
        *,
        timeout: float | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        """One request to ``url`` (JSON in and out), its errors as ``Offline`` / ``HttpError``."""
        data = None if body is None else json.dumps(redact(body)).encode("utf-8")
        if not url.startswith(("http://", "https://")):
            raise Offline(f"{self.profile.url!r} is not an http(s) URL")
        limit = self.timeout if timeout is None else max(0.05, timeout)
        import urllib.error
        import urllib.request

        request = urllib.request.Request(url, data=data, method=method)  # noqa: S310 - checked
        request.add_header("Accept", "application/json")
        request.add_header("User-Agent", f"atlas-cli/{__version__}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if self.profile.token:
            request.add_header("Authorization", f"Bearer {self.profile.token}")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=limit) as response:  # noqa: S310
                raw = response.read()
        except urllib.error.HTTPError as exc:
            raw = exc.read() if exc.fp is not None else b""
            wait = _seconds(exc.headers.get("Retry-After") if exc.headers else None)
            raise HttpError(exc.code, _json(raw), retry_after=wait) from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            sent = isinstance(reason, (TimeoutError, socket.timeout))
            raise Offline(f"{self.profile.url} unreachable ({reason})", sent=sent) from None
        except TimeoutError:
            raise Offline(f"{self.profile.url} did not answer in {limit:.1f}s", sent=True) from None
        except (ConnectionError, OSError) as exc:  # reset or closed mid-answer
            raise Offline(f"{self.profile.url}: connection lost ({exc})", sent=True) from None
        except Exception as exc:  # http.client.RemoteDisconnected, BadStatusLine, ...
            raise Offline(f"{self.profile.url}: bad answer ({exc})", sent=True) from None
        return _json(raw)


def _q(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _json(raw: bytes) -> Any:
    if not raw:
        return {}
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return {}


def _seconds(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None  # an HTTP date: the caller's own backoff decides
