"""The fuzz suite's shared pieces: bounded, derandomized Hypothesis settings (stable in CI,
the whole suite well under a minute), JSON strategies, and the shared error shape check."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.cache import cache
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from memory.services import bookkeeping
from tests.atlas_platform.mcp.conftest import atlas_server, embedded_store  # noqa: F401 - shared fixtures

FUZZ = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Text that tends to break things: NULs, lone surrogates are not JSON-encodable as UTF-8 and
# are left out; control characters, long runs, path and SQL punctuation, far-past phrases.
NASTY = st.sampled_from(
    [
        "\x00",
        "a\x00b",
        "%00",
        "../",
        "' OR 1=1 --",
        "5000 years ago",
        "1000000000 weeks ago",
        "catalog:x",
        "9999-12-31T23:59:59+00:00",
        "0001-01-01T00:00:00",
        "\u202e",
        "x" * 5000,
    ]
)
TEXT = st.one_of(st.text(max_size=40), NASTY)
NUMBER = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
)
SCALAR = st.one_of(st.none(), st.booleans(), NUMBER, TEXT)
JSON = st.recursive(
    SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)),
    max_leaves=12,
)
FIELDS = [
    "text",
    "query",
    "memory_type",
    "k",
    "timestamp",
    "metadata",
    "tags",
    "steps",
    "supersedes",
    "confidence",
    "include_catalog",
    "memory_types",
    "success",
    "refined_steps",
    "name",
    "external_id",
    "id",
    "documents",
    "replace",
    "title",
    "body",
    "status",
    "to",
    "session_id",
    "content",
    "path",
]
# An object whose keys are mostly the fields the API declares, so values reach the services.
BODY = st.one_of(
    st.dictionaries(st.sampled_from(FIELDS), JSON, max_size=6),
    st.dictionaries(st.sampled_from(FIELDS), SCALAR, min_size=1, max_size=4),
    JSON,
)


def shared_error(content: bytes) -> dict[str, Any]:
    """The shared error shape ``{"error": {code, message, request_id}}`` (asserted)."""
    body = json.loads(content)
    assert set(body) == {"error"}, body
    error: dict[str, Any] = body["error"]
    assert isinstance(error["code"], str) and error["code"], body
    assert isinstance(error["message"], str) and error["message"], body
    assert "request_id" in error, body
    return error


@pytest.fixture
def fuzz_store(settings: Any, tmp_path: Any, db: None) -> Iterator[None]:
    """The embedded store, and rate limits out of the way (the fuzzer sends many calls)."""
    settings.ATLAS_MEMORY_BACKEND = "embedded"
    settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")
    settings.ATLAS_ES_URL = ""
    for scope in ("RECALL", "WRITE", "READ", "OPERATIONS"):
        setattr(settings, f"ATLAS_RATE_{scope}", "100000/min")
    cache.clear()
    yield
    bookkeeping.drain()
    cache.clear()
