"""Which backend serves this process, built once per configuration."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from atlas_platform.cluster import ClusterConfig
from memory.engine.base import MemoryBackend

if TYPE_CHECKING:
    from memory.engine.elasticsearch.client import Layout, ScopedKeys

_lock = threading.Lock()
_backends: dict[tuple[object, ...], MemoryBackend] = {}


def get_backend(
    *,
    dims: int,
    keys: ScopedKeys | None = None,
    layout: Layout | None = None,
    deployment: Callable[[], str] | None = None,
) -> MemoryBackend:
    """The configured backend (``ATLAS_MEMORY_BACKEND``), ready to use. ``keys`` provides users'
    scoped keys to a backend that reads ``dls`` scopes with them (Elasticsearch), ``layout``
    which tenants keep users' statistics apart, ``deployment`` this deployment's id (asked
    once per backend built)."""
    kind = settings.ATLAS_MEMORY_BACKEND
    if kind == "embedded":
        key: tuple[object, ...] = (kind, settings.ATLAS_EMBEDDED_PATH, dims)
    elif kind == "elasticsearch":
        config = ClusterConfig.from_settings()
        if config is None:
            raise ImproperlyConfigured("ATLAS_MEMORY_BACKEND=elasticsearch needs ATLAS_ES_URL.")
        key = (kind, config, dims, id(keys), id(layout), settings.ATLAS_DEPLOYMENT_ID)
    else:
        raise ImproperlyConfigured("ATLAS_MEMORY_BACKEND must be 'embedded' or 'elasticsearch'.")
    with _lock:
        backend = _backends.get(key)
        if backend is None:
            backend = _build(kind, dims, keys, layout, deployment() if deployment else "")
            backend.ensure_ready()
            _backends[key] = backend
    return backend


def _build(
    kind: str, dims: int, keys: ScopedKeys | None, layout: Layout | None, deployment: str
) -> MemoryBackend:
    if kind == "embedded":
        from memory.engine.embedded import EmbeddedBackend

        path = Path(settings.ATLAS_EMBEDDED_PATH)
        path.parent.mkdir(parents=True, exist_ok=True)
        return EmbeddedBackend(path=path, dims=dims)
    from memory.engine.elasticsearch import ElasticsearchBackend

    config = ClusterConfig.from_settings()
    assert config is not None  # noqa: S101 - checked by get_backend
    return ElasticsearchBackend(
        config=config, dims=dims, keys=keys, layout=layout, deployment=deployment
    )
