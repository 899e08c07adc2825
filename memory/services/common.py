"""Shared pieces of the memory services: the engine handle, validation, error mapping."""

from __future__ import annotations

import contextlib
import logging
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from django.conf import settings

from atlas_platform.exceptions import ValidationError
from atlas_platform.text import PROBLEMS, text_problem
from memory.embedding import Embedder, EmbeddingError, default_embedder
from memory.engine.base import EngineError, MemoryBackend
from memory.engine.registry import get_backend
from memory.engine.types import ERASABLE_TYPES, MemoryType
from memory.errors import MemoryStoreUnavailable
from memory.services.scoping import scoped_keys, tenant_layout
from tenants.services.deployment import deployment_id

logger = logging.getLogger(__name__)


def embedder() -> Embedder:
    return default_embedder()


def backend() -> MemoryBackend:
    """The configured engine, reading ``dls`` scopes with the users' scoped keys."""
    return get_backend(
        dims=embedder().dims, keys=scoped_keys, layout=tenant_layout, deployment=deployment_id
    )


def new_id() -> str:
    return uuid.uuid4().hex


def now() -> datetime:
    return datetime.now(UTC)


def clean_text(text: object, *, field: str = "text") -> str:
    """Non-empty, at most ``ATLAS_MAX_MEMORY_CHARS``; kept verbatim otherwise."""
    if not isinstance(text, str) or not text.strip():
        raise ValidationError(f"{field} must be a non-empty string.", code="empty_text")
    limit = settings.ATLAS_MAX_MEMORY_CHARS
    if len(text) > limit:
        raise ValidationError(
            f"{field} is {len(text)} characters; the limit is {limit}.", code="text_too_long"
        )
    problem = text_problem(text)
    if problem is not None:
        raise ValidationError(f"{field} {PROBLEMS[problem]}.", code=problem)
    return text


METADATA_MAX_DEPTH = 32
INT64 = (-(2**63), 2**63 - 1)  # what the store's numbers hold (a JSON number beyond: a 400)


def clean_metadata(metadata: dict[str, Any] | None) -> dict[str, Any]:
    """A JSON object nested at most ``METADATA_MAX_DEPTH`` levels (checked without recursion:
    a hostile depth must cost a loop, not the stack). Deeper is a 400 here, not a refusal by
    the store whose error could quote the document."""
    value = dict(metadata or {})
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > METADATA_MAX_DEPTH:
            raise ValidationError(
                f"metadata nests deeper than {METADATA_MAX_DEPTH} levels.", code="metadata_too_deep"
            )
        children = node.values() if isinstance(node, dict) else node
        for child in children:
            if isinstance(child, int) and not INT64[0] <= child <= INT64[1]:
                raise ValidationError(
                    "metadata holds an integer beyond 64 bits; send it as a string.",
                    code="metadata_out_of_range",
                )
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return value


PROJECT_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,199}$")


def clean_project(project: str | None) -> str | None:
    """A project key as memory keeps it (opaque: the agents app names projects), or None."""
    if project is None:
        return None
    if not isinstance(project, str) or not PROJECT_PATTERN.match(project):
        raise ValidationError(
            "project must be a project key (letters, digits, . _ : @ / -; up to 200).",
            code="bad_project",
        )
    return project


def clean_confidence(value: float) -> float:
    if not 0.0 <= value <= 1.0:
        raise ValidationError("confidence must be between 0 and 1.", code="bad_confidence")
    return float(value)


STORE_FAILED = "The memory store failed or could not be reached; try again shortly."


@contextlib.contextmanager
def store_errors() -> Iterator[None]:
    """Map engine and embedder failures onto the domain's 503. The failure's own text (a
    cluster's error, a document it refused) goes to the log, never into the answer."""
    try:
        yield
    except (EngineError, EmbeddingError) as exc:
        logger.warning("memory store failed", extra={"error": repr(exc)})
        raise MemoryStoreUnavailable(STORE_FAILED) from exc


def personal_type(memory_type: str) -> MemoryType:
    """``memory_type`` if it is a personal type (what an erasure walks), else a 400."""
    for kind in ERASABLE_TYPES:
        if kind == memory_type:
            return kind
    raise ValidationError(f"Not a personal memory type: {memory_type!r}.", code="bad_memory_type")
