"""Index templates and ``ensure_ready``: the mappings and settings live in
``deploy/elasticsearch/templates`` (strict mappings; ``__PREFIX__`` and ``"__DIMS__"`` are
filled in here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from elasticsearch import ApiError, TransportError

from memory.engine.elasticsearch.client import Connection, call, failure

Json = dict[str, Any]
TEMPLATES_DIR = Path(__file__).resolve().parents[3] / "deploy" / "elasticsearch" / "templates"


def ensure_ready(conn: Connection, *, dims: int) -> None:
    """Put the component and index templates, then create the memories index if missing."""
    prefix = conn.config.index_prefix
    component = load_template("memory-component.json", prefix, dims)
    template = load_template("memory-index.json", prefix, dims)
    w = conn.writer
    call(
        "put the component template",
        lambda: w.cluster.put_component_template(name=f"{prefix}-memory", body=component),
    )
    call(
        "put the index template",
        lambda: w.indices.put_index_template(name=f"{prefix}-memory", body=template),
    )
    try:
        w.indices.create(index=conn.index)
    except ApiError as exc:
        # Another process may have won the race; that is the outcome we wanted.
        if exc.error != "resource_already_exists_exception":
            raise failure("create an index", exc) from exc
    except TransportError as exc:
        raise failure("create an index", exc) from exc


def load_template(filename: str, prefix: str, dims: int) -> Json:
    filled: Json = _substitute(json.loads((TEMPLATES_DIR / filename).read_text()), prefix, dims)
    return filled


def _substitute(value: Any, prefix: str, dims: int) -> Any:
    """Fill the placeholders; ``"__DIMS__"`` becomes a number so the files stay valid JSON."""
    if isinstance(value, dict):
        return {k: _substitute(v, prefix, dims) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, prefix, dims) for v in value]
    if value == "__DIMS__":
        return dims
    if isinstance(value, str):
        return value.replace("__PREFIX__", prefix)
    return value
