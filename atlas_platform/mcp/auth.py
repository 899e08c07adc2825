"""Bearer-token authentication of every MCP request, before the MCP SDK sees it.

``/mcp/`` serves a user-scoped token's own user; ``/api/atlas/mcp/<external_id>`` serves the user
a token names (a tenant token: any active user of its tenant; a user token: only its own). The
resolved identity rides in the ASGI scope, where the tools read it back through the SDK's request
context, so no tool ever trusts a user id from its arguments.

Auto-provisioning (``Tenant.auto_provision_users`` + a tenant token with ``allow_provisioning``)
follows REST's rule, "the first turn creates the user": a client naming a user who does not
exist yet may connect (initialize, list the tools) with no user behind its identity, and its
first ``record_turn`` provisions them (``calls.call(provisions=True)``); any other tool called
before that answers ``user_not_found``. Without the right or the setting the request is refused
here, at connect, as for any unknown user.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections
from django.http.request import split_domain_port, validate_host
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from atlas_platform.api import retry_after
from atlas_platform.callers import callers
from atlas_platform.context import Actor, request_id
from atlas_platform.exceptions import (
    AtlasError,
    AuthenticationFailed,
    NotFound,
    PermissionDenied,
    Throttled,
)
from atlas_platform.exceptions import ValidationError as AtlasValidationError
from atlas_platform.mcp.errors import internal_error_json, refusal_json
from atlas_platform.middleware import REQUEST_ID_HEADER, choose_request_id
from atlas_platform.parsers import MAX_BODY_DEPTH, too_deep
from atlas_platform.throttling import token_rate_check

IDENTITY_SCOPE_KEY = "atlas.mcp.identity"
BODY_KEPT_BYTES = 1 << 20  # enough for any JSON-RPC request's id; larger bodies are not kept
logger = logging.getLogger(__name__)
_DEBUG_HOSTS = [".localhost", "127.0.0.1", "[::1]"]  # what Django allows with DEBUG and no list


@dataclass(frozen=True)
class McpIdentity:
    """Who an MCP request acts as: the token presented and the user it acts for.

    ``user`` is None only for a user who does not exist yet and whom the first ``record_turn``
    will provision (``external_id`` names them); every tool goes through ``calls.call``, which
    provisions or refuses them."""

    token: Any
    user: Any | None
    request_id: str
    external_id: str = ""

    @property
    def actor(self) -> Actor:
        token_id, name = callers().label(token=self.token)
        return Actor(type="token", id=token_id, label=name)


def identity_resolve(*, authorization: str, external_id: str | None) -> tuple[Any, Any | None, str]:
    """The token behind an ``Authorization`` header, the user it acts for and their external
    id (sync, DB).

    ``external_id`` is the user named in the path, or None on ``/mcp/`` (the token's own user).
    The user is None for one a first turn will provision (``awaits_provisioning``). The rules
    are the REST views' (``atlas_platform.callers``).
    Raises ``AuthenticationFailed`` (401), ``NotFound`` (404: a user the token may not name,
    never saying whether it exists elsewhere) or ``PermissionDenied`` (403: a tenant token on
    ``/mcp/``, which does not say whom it acts for).
    """
    scheme, _, raw = authorization.partition(" ")
    if scheme.lower() != "bearer" or not raw.strip():
        raise AuthenticationFailed("Send 'Authorization: Bearer <token>'.", code="unauthenticated")
    rules = callers()
    token = rules.authenticate(raw=raw.strip())
    if external_id is None:
        external_id = rules.own_user(token=token)
        if external_id is None:
            raise PermissionDenied(
                "A tenant token must name the user it acts for: use /api/atlas/mcp/<user_id>.",
                code="user_required",
            )
    try:
        return token, rules.subject(token=token, external_id=external_id), external_id
    except NotFound:
        if rules.awaits_provisioning(token=token, external_id=external_id):
            return token, None, external_id
        raise


def _resolve_in_request(authorization: str, external_id: str | None) -> tuple[Any, Any | None, str]:
    """``identity_resolve`` with Django's per-request connection hygiene around it."""
    close_old_connections()
    try:
        return identity_resolve(authorization=authorization, external_id=external_id)
    finally:
        close_old_connections()


def _header(scope: Scope, name: str) -> str:
    wanted = name.lower().encode("latin-1")
    return next((v.decode("latin-1") for k, v in scope["headers"] if k == wanted), "")


def _host_allowed(host: str) -> bool:
    """The same ``ALLOWED_HOSTS`` rule Django applies to every other path."""
    domain, _port = split_domain_port(host)
    allowed = settings.ALLOWED_HOSTS or (_DEBUG_HOSTS if settings.DEBUG else [])
    return bool(domain) and validate_host(domain, allowed)


class _Body:
    """``receive`` that keeps what the client sent (up to ``BODY_KEPT_BYTES``), so an error
    answer can name the JSON-RPC request it refuses."""

    def __init__(self, receive: Receive) -> None:
        self.receive = receive
        self.chunks: list[bytes] = []
        self.size = 0
        self.complete = False
        self.replayed = False

    async def __call__(self) -> Message:
        message = await self.receive()
        if message["type"] == "http.request":
            chunk = message.get("body", b"")
            self.size += len(chunk)
            if self.size <= BODY_KEPT_BYTES:
                self.chunks.append(chunk)
            self.complete = not message.get("more_body", False)
        elif message["type"] == "http.disconnect":
            self.complete = True
        return message

    async def replay(self) -> Message:
        """``receive`` for the app once the whole body was read here: the body, then the
        client's own messages (a disconnect)."""
        if not self.replayed:
            self.replayed = True
            return {"type": "http.request", "body": b"".join(self.chunks), "more_body": False}
        return await self.receive()

    async def read(self) -> bytes:
        """The whole body (reading what the app has not read yet); empty when too large."""
        while not self.complete:
            await self()
        return b"".join(self.chunks) if self.size <= BODY_KEPT_BYTES else b""


async def _answer(
    data: dict[str, Any], status: int, send: Send, challenge: str = "", retry: str = ""
) -> None:
    body = json.dumps(data).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    if challenge:
        headers.append((b"www-authenticate", challenge.encode()))
    if retry:
        headers.append((b"retry-after", retry.encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def _refuse(exc: AtlasError, body: _Body, send: Send) -> None:
    """Answer with the shared error shape (a JSON-RPC error for a JSON-RPC request); 401s
    carry the Bearer challenge."""
    challenge = ""
    if exc.status_code == 401:
        challenge = 'Bearer realm="atlas"' + (
            "" if exc.code == "unauthenticated" else ', error="invalid_token"'
        )
    retry = retry_after(exc).get("Retry-After", "") if exc.status_code in (409, 429, 503) else ""
    await _answer(refusal_json(exc, await body.read()), exc.status_code, send, challenge, retry)


class BearerAuth:
    """ASGI wrapper: authenticate, resolve the user, then hand the request to ``app``.

    Refused requests never reach the MCP SDK, so no tool runs for them. Every response carries
    ``X-Request-ID`` (the caller's, if well formed).
    """

    def __init__(self, app: ASGIApp, rate_scope: Callable[[str], str] | None = None) -> None:
        self.app = app
        self.rate_scope = rate_scope  # a tool's name -> its REST rate-limit scope

    async def __call__(
        self, scope: Scope, receive: Receive, send: Send, *, external_id: str | None
    ) -> None:
        rid = choose_request_id(_header(scope, REQUEST_ID_HEADER))
        sent = _Sent(_echo_request_id(send, rid))
        body = _Body(receive)
        with request_id(rid):
            try:
                await self._authenticated(scope, body, sent, rid, external_id)
            except AtlasError as exc:
                if sent.started:  # a response is on its way already: nothing to replace
                    logger.warning("MCP error after the response started", exc_info=True)
                else:
                    await _refuse(exc, body, sent)
            except Exception:
                # Logged with its traceback; the client sees JSON and the request id only.
                logger.exception("unhandled error on the MCP endpoint %s", scope["path"])
                if not sent.started:
                    await _answer(internal_error_json(await body.read()), 500, sent)

    async def _authenticated(
        self, scope: Scope, receive: _Body, send: Send, rid: str, external_id: str | None
    ) -> None:
        """Refuse (``AtlasError``) or hand the request to ``app`` with its identity."""
        host = _header(scope, "host")
        if not _host_allowed(host):
            domain = split_domain_port(host)[0] or host
            raise AtlasValidationError(
                f"Invalid Host header {domain[:100]!r}: add it to ALLOWED_HOSTS (comma "
                "separated) to serve it.",
                code="bad_host",
            )
        # In a worker thread, not Django's one shared sync thread (see ``tools.call``).
        resolve = sync_to_async(_resolve_in_request, thread_sensitive=False)
        token, user, named = await resolve(_header(scope, "authorization"), external_id)
        identity = McpIdentity(token=token, user=user, request_id=rid, external_id=named)
        inner: Receive = receive
        if scope.get("method") == "POST":
            # Read whole (chunked or not), so no body skips the depth check or the rate limit.
            body = b"" if _declared_size(scope) > BODY_KEPT_BYTES else await receive.read()
            if _declared_size(scope) > BODY_KEPT_BYTES or receive.size > BODY_KEPT_BYTES:
                raise BodyTooLarge(
                    f"The request body is over {BODY_KEPT_BYTES} bytes.", code="request_too_large"
                )
            await self._count(token, _tool_calls(body))
            inner = receive.replay
        await self.app({**scope, IDENTITY_SCOPE_KEY: identity}, inner, send)

    async def _count(self, token: Any, calls: list[str]) -> None:
        """Each tool call counts against the token's REST limit of its scope (one policy for
        both entry points); past it, the request is refused (429) and no tool runs."""
        if self.rate_scope is None:
            return
        check = sync_to_async(token_rate_check, thread_sensitive=False)
        for name in calls:
            wait = await check(token.pk, self.rate_scope(name))
            if wait is not None:
                raise Throttled(
                    f"Request was throttled. Expected available in {int(wait)} seconds.",
                    retry_after=wait,
                )


class BodyTooLarge(AtlasError):
    status_code = 413
    code = "request_too_large"


def _declared_size(scope: Scope) -> int:
    """The body's Content-Length (0 for a chunked body, which declares none: read to see)."""
    try:
        return int(_header(scope, "content-length") or 0)
    except ValueError:
        return 0


def _tool_calls(body: bytes) -> list[str]:
    """The tools a JSON-RPC body calls (a batch may call several). A body nested deeper than
    the REST limit is refused (400) here, before the SDK's parser could exhaust its stack;
    a body that is not JSON is the SDK's to refuse."""
    try:
        message = json.loads(body)
    except RecursionError:
        message, deep = None, True
    except ValueError:
        return []
    else:
        deep = too_deep(message)
    if deep:
        raise AtlasValidationError(
            f"The JSON body nests deeper than {MAX_BODY_DEPTH} levels.", code="too_deep"
        )
    messages = message if isinstance(message, list) else [message]
    names = []
    for item in messages:
        if isinstance(item, dict) and item.get("method") == "tools/call":
            params = item.get("params")
            name = params.get("name") if isinstance(params, dict) else None
            names.append(name if isinstance(name, str) else "")
    return names


class _Sent:
    """``send`` that remembers whether the response has started (then no error can replace
    it)."""

    def __init__(self, send: Send) -> None:
        self.send = send
        self.started = False

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started = True
        await self.send(message)


def _echo_request_id(send: Send, rid: str) -> Send:
    async def sender(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [*message.get("headers", []), (b"x-request-id", rid.encode())]
            message = {**message, "headers": headers}
        await send(message)

    return sender
