"""The one adapter to the Elasticsearch cluster: the client factory (the platform's own
credential, or a user's scoped key) and the one error mapping, used by the security / licence
calls here and by the Elasticsearch memory backend.

Callers never see a client-library exception: every failure is an ``Unavailable`` (here a
``ClusterUnavailable``; the engine asks for its ``EngineError``) with a plain message. The
cluster's own error text goes to the log, never into an error a client is shown.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson
from django.conf import settings
from elasticsearch import (
    ApiError,
    ConnectionTimeout,
    Elasticsearch,
    SerializationError,
    TransportError,
)
from elasticsearch.serializer import NdjsonSerializer, OrjsonSerializer

from atlas_platform import metrics
from atlas_platform.exceptions import ClusterUnavailable, Unavailable

logger = logging.getLogger(__name__)

# Licence types under which the cluster enforces document-level security.
DLS_LICENCES = frozenset({"trial", "platinum", "enterprise"})

T = TypeVar("T")


class _OrjsonNdjsonSerializer(NdjsonSerializer):
    """The client's NDJSON serializer (bulk, msearch) with orjson for each line."""

    def json_dumps(self, data: Any) -> bytes:
        return orjson.dumps(data, default=self.default, option=orjson.OPT_SERIALIZE_NUMPY)

    def json_loads(self, data: bytes) -> Any:
        return orjson.loads(data)


@dataclass(frozen=True)
class ClusterConfig:
    url: str
    username: str = ""
    password: str = ""
    api_key: str = ""
    timeout_s: float = 10.0
    index_prefix: str = "atlas"
    read_timeout_s: float = 5.0
    replicas: int = 0

    @property
    def hosts(self) -> list[str]:
        """The node URLs ``url`` lists (comma-separated): the client spreads calls over them and
        leaves a node that fails out for a while, so one node down is not the whole cluster."""
        return [part.strip() for part in self.url.split(",") if part.strip()]

    @classmethod
    def from_settings(cls) -> ClusterConfig | None:
        if not settings.ATLAS_ES_URL:
            return None
        return cls(
            url=settings.ATLAS_ES_URL,
            username=settings.ATLAS_ES_USERNAME,
            password=settings.ATLAS_ES_PASSWORD,
            api_key=settings.ATLAS_ES_API_KEY,
            timeout_s=settings.ATLAS_ES_TIMEOUT_S,
            index_prefix=settings.ATLAS_ES_INDEX_PREFIX,
            read_timeout_s=min(settings.ATLAS_ES_READ_TIMEOUT_S, settings.ATLAS_ES_TIMEOUT_S),
            replicas=settings.ATLAS_ES_REPLICAS,
        )

    @property
    def memory_index_pattern(self) -> str:
        """Every memory index of this deployment: ``<prefix>-t-<tenant>[-u-<user>]``."""
        return f"{self.index_prefix}-t-*"

    @property
    def legacy_index(self) -> str:
        """The one index every tenant shared before the per-tenant layout
        (``manage.py es_layout_migrate`` moves its documents out)."""
        return f"{self.index_prefix}-memories"

    def tenant_index(self, tenant_id: str) -> str:
        """The index of a tenant's documents (its catalog, and its users' unless they have
        their own): its term statistics are the tenant's alone."""
        return f"{self.index_prefix}-t-{_name_part(tenant_id)}"

    def user_index(self, tenant_id: str, user_id: str) -> str:
        """The index of one user's documents under per-user statistics."""
        return f"{self.tenant_index(tenant_id)}-u-{_name_part(user_id)}"

    @staticmethod
    def archive_index(hot_index: str) -> str:
        """The archive of superseded facts beside a tenant's or user's index (a name part has
        no hyphen, so it is no other index's name; memory.engine.elasticsearch.archive)."""
        return f"{hot_index}{ARCHIVE_SUFFIX}"


ARCHIVE_SUFFIX = "-archive"
_NAME_PART = re.compile(r"[a-z0-9][a-z0-9_]{0,63}")


def _name_part(value: str) -> str:
    """An id as it may stand in an index name: as is when it is a plain lowercase word (the
    platform's hex ids are), else a digest of it (never two ids onto one name by accident)."""
    if _NAME_PART.fullmatch(value):
        return value
    return "h" + hashlib.sha256(value.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class ApiKey:
    id: str
    secret: str


class Cluster:
    """The platform's own (writer / provisioner) view of the cluster."""

    def __init__(self, config: ClusterConfig) -> None:
        self.config = config
        auth: dict[str, Any] = {}
        if config.api_key:
            auth["api_key"] = config.api_key
        elif config.username:
            auth["basic_auth"] = (config.username, config.password)
        self.client = cluster_client(config, **auth)
        # Reads with the platform's credential: the same pool, the shorter read budget.
        self.reader = self.client.options(request_timeout=config.read_timeout_s)

    def as_api_key(self, key: ApiKey) -> Elasticsearch:
        """A client that authenticates with a user's scoped key (for reads under DLS). It shares
        the platform client's connection pool; only the auth header (and the read budget)
        differ."""
        return self.client.options(
            api_key=(key.id, key.secret), request_timeout=self.config.read_timeout_s
        )

    def dls_available(self) -> bool:
        """Whether the licence lets the cluster enforce document-level security."""
        body = _call("read the licence", lambda: self.client.license.get())
        licence = body.get("license", {})
        return licence.get("status") == "active" and licence.get("type") in DLS_LICENCES

    def create_api_key(
        self,
        *,
        name: str,
        role_descriptors: dict[str, Any],
        metadata: dict[str, Any],
        expiration: str | None = None,
    ) -> ApiKey:
        body = _call(
            "create an API key",
            lambda: self.client.security.create_api_key(
                name=name,
                role_descriptors=role_descriptors,
                metadata=metadata,
                expiration=expiration,
                # Visible at once: the cluster's default waits for the security index's next
                # scheduled refresh (~1 s per key); authenticating with the key never needed
                # that, and onboarding a tenant's users one after another paid it per user.
                refresh="true",
            ),
        )
        return ApiKey(id=body["id"], secret=body["api_key"])

    def api_keys_alive(self, key_ids: list[str]) -> set[str]:
        """Those of ``key_ids`` the cluster still accepts (its own keys: neither invalidated,
        expired nor unknown to it)."""
        alive: set[str] = set()
        for start in range(0, len(key_ids), 500):
            page = key_ids[start : start + 500]
            query = functools.partial(
                self.client.security.query_api_keys,
                query={"ids": {"values": page}},
                size=len(page),
            )
            body = _call("read API keys", query)
            now_ms = time.time() * 1000
            alive |= {
                key["id"]
                for key in body.get("api_keys", [])
                if not key.get("invalidated") and (key.get("expiration") or now_ms + 1) > now_ms
            }
        return alive

    def invalidate_api_keys(self, key_ids: list[str]) -> None:
        """Invalidate several keys in one call; raises unless every one is (or was) invalid."""
        body = _call(
            "invalidate API keys",
            lambda: self.client.security.invalidate_api_key(ids=key_ids, owner=True),
        )
        done = set(body.get("invalidated_api_keys", [])) | set(
            body.get("previously_invalidated_api_keys", [])
        )
        if not set(key_ids) <= done:
            raise ClusterUnavailable("The cluster did not invalidate every API key asked.")

    def invalidate_api_key(self, key_id: str) -> None:
        body = _call(
            "invalidate an API key",
            # owner: the platform's role may manage only the keys it made itself.
            lambda: self.client.security.invalidate_api_key(ids=[key_id], owner=True),
        )
        done = set(body.get("invalidated_api_keys", [])) | set(
            body.get("previously_invalidated_api_keys", [])
        )
        if key_id not in done:
            raise ClusterUnavailable(f"The cluster did not invalidate API key {key_id}.")


class _Slots:
    """The process's cluster call slots (``ATLAS_ES_MAX_IN_FLIGHT``), made at first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._semaphore: threading.BoundedSemaphore | None = None

    def get(self) -> threading.BoundedSemaphore:
        with self._lock:
            if self._semaphore is None:
                self._semaphore = threading.BoundedSemaphore(settings.ATLAS_ES_MAX_IN_FLIGHT)
            return self._semaphore


cluster_slots = _Slots()


class BoundedElasticsearch(Elasticsearch):
    """The client with a bulkhead: at most ``ATLAS_ES_MAX_IN_FLIGHT`` calls per process wait
    on the cluster at once, fewer than the request threads, so a frozen cluster leaves threads
    for everything else (health, database-only endpoints). A call that finds no slot within
    ``ATLAS_ES_SLOT_WAIT_S`` fails at once as a timeout (a 503 to the caller)."""

    def perform_request(self, *args: Any, **kwargs: Any) -> Any:
        slots = cluster_slots.get()
        if not slots.acquire(timeout=settings.ATLAS_ES_SLOT_WAIT_S):
            metrics.SHED.labels(dependency="elasticsearch").inc()
            metrics.dependency_error("elasticsearch")
            raise ConnectionTimeout("every cluster call slot of this process is taken")
        try:
            return super().perform_request(*args, **kwargs)
        except TransportError:
            metrics.dependency_error("elasticsearch")
            raise
        finally:
            slots.release()


def cluster_client(config: ClusterConfig, **auth: Any) -> Elasticsearch:
    """The one way Atlas builds an Elasticsearch client (``request_timeout``: the write
    budget; reads ask for ``read_timeout_s`` per call, ``read_options``)."""
    hosts = config.hosts
    return BoundedElasticsearch(
        hosts,
        request_timeout=config.timeout_s,
        # With several nodes, a call whose node refused or dropped the connection goes to the
        # next one (a node lost is not an error); never on a timeout or an error status, where
        # the cluster may be doing the work. A call repeated after a dropped connection is
        # safe: writes are create-only or conditional (a second create finds the first: 409).
        max_retries=len(hosts) - 1,
        retry_on_timeout=False,
        retry_on_status=(),
        # orjson: several times faster than the standard library, on recall's responses
        # and on the query vectors it sends (msearch bodies are NDJSON).
        serializers={
            OrjsonSerializer.mimetype: OrjsonSerializer(),
            NdjsonSerializer.mimetype: _OrjsonNdjsonSerializer(),
        },
        **auth,
    )


def cluster_failure(
    what: str, exc: Exception, *, error: type[Unavailable] = ClusterUnavailable
) -> Unavailable:
    """The error a caller sees for a failed cluster call: ``error`` with a plain message; the
    cluster's own text is logged here, once."""
    # A serialisation error quotes the whole document it could not encode, and a refusal's
    # body may quote parts of it: for those the log keeps the kind, status and error type,
    # never memory text. A connection failure's text (host, reason) is logged as it is.
    if isinstance(exc, ApiError):
        body = exc.body if isinstance(exc.body, dict) else {}
        kind = body.get("error", {}).get("type") if isinstance(body.get("error"), dict) else None
        detail = f"{type(exc).__name__}({exc.meta.status}, {kind or 'error'})"
    elif isinstance(exc, SerializationError):
        detail = type(exc).__name__
    else:
        detail = repr(exc)
    logger.warning("cluster call failed", extra={"what": what, "error": detail})
    return error(f"Could not {what} on the search cluster.")


def cluster_call(
    what: str, fn: Callable[[], T], *, error: type[Unavailable] = ClusterUnavailable
) -> T:
    """Run one cluster call; a client-library failure becomes ``error`` (``cluster_failure``)."""
    try:
        return fn()
    except (ApiError, TransportError) as exc:
        raise cluster_failure(what, exc, error=error) from exc


def _call(what: str, fn: Callable[[], Any]) -> Any:
    response = cluster_call(what, fn)
    return response.body if hasattr(response, "body") else response


def get_cluster() -> Cluster | None:
    """The configured cluster, or None when Atlas runs on the embedded backend alone."""
    config = ClusterConfig.from_settings()
    return Cluster(config) if config else None


def require_cluster() -> Cluster:
    cluster = get_cluster()
    if cluster is None:
        raise ClusterUnavailable(
            "No search cluster is configured (ATLAS_ES_URL): scoped keys need Elasticsearch.",
            code="no_cluster",
        )
    return cluster
