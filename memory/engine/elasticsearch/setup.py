"""Index templates and ``ensure_ready``: the mappings and settings live in
``deploy/elasticsearch/templates`` (strict mappings; ``__PREFIX__``, ``__DEPLOYMENT__`` and
``"__DIMS__"`` are filled in here).

Indices are created on first write from the index template (``<prefix>-t-*``), which stamps
the deployment's id into each one's mapping ``_meta``. ``ensure_ready`` refuses to go on when
the prefix's template or any of its indices carry another deployment's id: two deployments
(or one whose database was reset) must never write into, or hand out keys over, one another's
indices.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from memory.engine.base import EngineError
from memory.engine.elasticsearch.client import Connection, call

Json = dict[str, Any]
TEMPLATES_DIR = Path(__file__).resolve().parents[3] / "deploy" / "elasticsearch" / "templates"


class DeploymentMismatch(EngineError):
    """The index prefix holds another deployment's indices: the platform will not use them."""

    code = "deployment_mismatch"


def ensure_ready(conn: Connection, *, dims: int) -> None:
    """Check that the prefix is this deployment's, then put the component and index
    templates (indices follow on first write)."""
    prefix = conn.config.index_prefix
    check_deployment(conn)
    component = load_template("memory-component.json", prefix, dims, conn.deployment)
    # Indices made from now on; an existing index keeps its count (PUT <index>/_settings).
    component["template"]["settings"]["index"]["number_of_replicas"] = conn.config.replicas
    template = load_template("memory-index.json", prefix, dims, conn.deployment)
    w = conn.writer
    call(
        "put the component template",
        lambda: w.cluster.put_component_template(name=f"{prefix}-memory", body=component),
    )
    call(
        "put the index template",
        lambda: w.indices.put_index_template(name=f"{prefix}-memory", body=template),
    )
    add_new_fields(conn, component)


# Fields added to the mapping after indices were made from it: ``ensure_ready`` puts them into
# every existing memory index (a strict mapping refuses a document with a field it lacks).
# ``context`` / ``context_ids``: a turn's lexical context (memory.services.turn_context).
# ``project``: the project a memory was written from (recall's project filter).
ADDED_FIELDS = ("context", "context_ids", "project", "session_inferred")
BACKFILL_PAGE = 500


def add_new_fields(conn: Connection, component: Json) -> None:
    """Put ``ADDED_FIELDS`` (as the component template maps them) into those of the
    deployment's existing indices that lack one (a put-mapping once per older index; indices
    made from the current template have them)."""
    properties = component["template"]["mappings"]["properties"]
    added = {name: properties[name] for name in ADDED_FIELDS}
    mappings = call(
        "read the index mappings",
        lambda: conn.writer.indices.get_mapping(
            index=conn.index_pattern, allow_no_indices=True, expand_wildcards="all"
        ),
    )
    lacking = sorted(
        index
        for index, body in mappings.body.items()
        if set(added) - set(body.get("mappings", {}).get("properties", {}))
    )
    for start in range(0, len(lacking), 50):  # a bounded URL per request
        put = functools.partial(
            conn.writer.indices.put_mapping,
            index=",".join(lacking[start : start + 50]),
            properties=added,
        )
        call("add new fields to the memory indices", put)
    if lacking:
        backfill_projects(conn, lacking)


def backfill_projects(conn: Connection, indices: list[str]) -> None:
    """Give the documents of indices that lacked ``project`` the one agents' writes kept in
    ``metadata.project`` (not indexed) before the field existed: pages of a search, partial
    updates in a bulk (no scripts on this cluster), each conditional on the version read, so
    a document changed meanwhile is left as its writer left it. Once: the next
    ``ensure_ready`` finds the field mapped."""
    for start in range(0, len(indices), 50):
        names = ",".join(indices[start : start + 50])
        after: list[Any] | None = None
        while True:
            hits = _lacking_project(conn, names, after)
            if not hits:
                break
            after = hits[-1]["sort"]
            operations: list[Json] = []
            for hit in hits:
                project = (hit["_source"].get("metadata") or {}).get("project")
                if isinstance(project, str) and project:
                    ref = {
                        "_index": hit["_index"],
                        "_id": hit["_id"],
                        "routing": hit.get("_routing"),
                        "if_seq_no": hit["_seq_no"],
                        "if_primary_term": hit["_primary_term"],
                    }
                    operations += [{"update": ref}, {"doc": {"project": project}}]
            if operations:
                bulk = functools.partial(conn.writer.bulk, operations=operations, refresh=True)
                call("fill the project field from metadata", bulk)


def _lacking_project(conn: Connection, names: str, after: list[Any] | None) -> list[Json]:
    search = functools.partial(
        conn.writer.search,
        index=names,
        query={"bool": {"must_not": [{"exists": {"field": "project"}}]}},
        source_includes=["metadata.project"],
        sort=[{"id": "asc"}],
        search_after=after,
        size=BACKFILL_PAGE,
        seq_no_primary_term=True,
        allow_no_indices=True,
        expand_wildcards="all",
    )
    hits: list[Json] = call("read documents without a project", search)["hits"]["hits"]
    return hits


def foreign_indices(conn: Connection) -> dict[str, str]:
    """The prefix's memory indices (and its template, as ``<template>``) that carry another
    deployment's id, with that id ("" for one made before deployment ids)."""
    if not conn.deployment:
        return {}
    prefix = conn.config.index_prefix
    found: dict[str, str] = {}
    templates = call(
        "read the index template",
        lambda: conn.writer.options(ignore_status=404).indices.get_index_template(
            name=f"{prefix}-memory"
        ),
    )
    for entry in templates.body.get("index_templates", []):
        owner = entry["index_template"].get("_meta", {}).get("atlas_deployment", "")
        if owner != conn.deployment:
            found["<template>"] = owner
    mappings = call(
        "read the index mappings",
        lambda: conn.writer.indices.get_mapping(
            index=conn.index_pattern, allow_no_indices=True, expand_wildcards="all"
        ),
    )
    for index, body in mappings.body.items():
        owner = body.get("mappings", {}).get("_meta", {}).get("atlas_deployment", "")
        if owner != conn.deployment:
            found[index] = owner
    return found


def check_deployment(conn: Connection) -> None:
    foreign = foreign_indices(conn)
    if foreign:
        raise DeploymentMismatch(conflict_message(conn, foreign))


def conflict_message(conn: Connection, foreign: dict[str, str]) -> str:
    """What to say about ``foreign`` (``foreign_indices``): whose they are and what to do."""
    names = ", ".join(sorted(foreign)[:5])
    owners = ", ".join(sorted({repr(owner) for owner in foreign.values()}))
    return (
        f"The index prefix {conn.config.index_prefix!r} holds indices of another deployment "
        f"(deployment id {owners}; {names}); this deployment's id is {conn.deployment!r}. "
        "Refusing to use them. Give this deployment its own ATLAS_ES_INDEX_PREFIX; or, if they "
        "are this deployment's own indices and only its database was reset, set "
        "ATLAS_DEPLOYMENT_ID to that id."
    )


def load_template(filename: str, prefix: str, dims: int, deployment: str = "") -> Json:
    text = (TEMPLATES_DIR / filename).read_text()
    filled: Json = _substitute(json.loads(text), prefix, dims, deployment)
    return filled


def _substitute(value: Any, prefix: str, dims: int, deployment: str) -> Any:
    """Fill the placeholders; ``"__DIMS__"`` becomes a number so the files stay valid JSON."""
    if isinstance(value, dict):
        return {k: _substitute(v, prefix, dims, deployment) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, prefix, dims, deployment) for v in value]
    if value == "__DIMS__":
        return dims
    if isinstance(value, str):
        return value.replace("__PREFIX__", prefix).replace("__DEPLOYMENT__", deployment)
    return value
