"""MCP tools over the knowledge graph: search, related, blockers, diff, handoff, one entity.

Conventions of ``agents/mcp.py`` (one ``async def`` per tool, ``Annotated`` parameters, the
docstring is what the model reads, the body one call of one selector or service through
``atlas_platform.mcp.calls``). The user comes from the authenticated request, never the arguments.
Registered by the composition root (``atlas_server/asgi.py``) with ``HINTS``.
"""

# No ``from __future__ import annotations``: the SDK reads these signatures at runtime.

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from agents.mcp import call_for_user
from atlas_platform.mcp.calls import identity_of
from knowledge import selectors as sel
from knowledge.api import serializers as s
from knowledge.services.handoff import handoff_build
from tenants.models import User

Project = Annotated[
    str,
    Field(
        min_length=1,
        max_length=500,
        description='The project: "current" (where you work now), its name, its git remote, '
        "or its key (64 hex, as the session brief states it).",
    ),
]
Key = Annotated[
    str,
    Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,199}$",
        description="An entity key, e.g. `plan:docs-plans-migrate` or a front matter id.",
    ),
]


def _shape(shape: Any, name: str) -> Callable[[Any], dict[str, Any]]:
    return lambda value: {name: shape(value).data}


async def in_project(
    ctx: Context,
    project: str,
    fn: Callable[[User, str], Any],
    shape: Callable[[Any], dict[str, Any]],
) -> CallToolResult:
    """``fn(user, key)`` for the project as the model named it (``selectors.project_named``;
    "current" from the token's agent)."""
    slug = identity_of(ctx).token.agent_slug

    def run(user: User) -> Any:
        return fn(user, sel.project_named(user=user, name=project, agent_slug=slug).key)

    return await call_for_user(ctx, run, shape)


async def graph_search(
    ctx: Context,
    query: Annotated[str, Field(min_length=1, max_length=2000, description="What to find.")],
    project: Annotated[
        str | None,
        Field(
            min_length=1,
            max_length=500,
            description='Only this project: "current", its name, git remote or key.',
        ),
    ] = None,
    types: Annotated[list[str] | None, Field(max_length=20, description="Entity types.")] = None,
    statuses: Annotated[list[str] | None, Field(max_length=20, description="Statuses.")] = None,
    k: Annotated[int, Field(ge=1, le=50, description="How many.")] = 10,
) -> CallToolResult:
    """Search your project notes (plans, decisions, initiatives, task notes) by meaning and
    words. Use it before re-deriving a decision; not for conversation memories (recall_memory)."""

    slug = identity_of(ctx).token.agent_slug

    def run(user: User) -> Any:
        key = sel.project_named(user=user, name=project, agent_slug=slug).key if project else None
        return sel.graph_search(
            user=user, query=query, project_key=key, types=types, statuses=statuses, k=k
        )

    return await call_for_user(
        ctx, run, lambda hits: {"results": [s.SearchHitOut(h).data for h in hits]}
    )


async def graph_related(
    ctx: Context,
    project: Project,
    key: Key,
    depth: Annotated[int, Field(ge=1, le=2, description="1 or 2 hops.")] = 1,
) -> CallToolResult:
    """What an entity is blocked by, depends on, is part of, links to, and what points at it
    (blocks, required_by, has_part, referenced_by), one or two hops away."""

    def shape(found: Any) -> dict[str, Any]:
        edges = [
            {"source": a, "target": b, "label": label, "resolved": ok}
            for a, b, label, ok in found.edges
        ]
        return dict(s.RelatedOut({"root": found.root, "steps": found.steps, "edges": edges}).data)

    return await in_project(
        ctx,
        project,
        lambda user, pkey: sel.graph_related(user=user, project_key=pkey, key=key, depth=depth),
        shape,
    )


async def graph_blockers(
    ctx: Context,
    project: Project,
    stale_days: Annotated[float, Field(ge=0, le=3650, description="Idle at least.")] = 3,
) -> CallToolResult:
    """Blocked or waiting entities whose blocker has not moved for `stale_days` days."""
    return await in_project(
        ctx,
        project,
        lambda user, pkey: sel.graph_blockers(user=user, project_key=pkey, stale_days=stale_days),
        lambda rows: dict(s.BlockersOut({"results": rows}).data),
    )


async def graph_diff(
    ctx: Context,
    project: Project,
    since: Annotated[datetime, Field(description="From (ISO 8601).")],
    until: Annotated[datetime, Field(description="To (ISO 8601).")],
) -> CallToolResult:
    """What changed in the project's notes between two moments: created, deleted, status
    changes, newly blocked, unblocked, completed, edges, and notes whose meaning changed."""
    return await in_project(
        ctx,
        project,
        lambda user, pkey: sel.graph_diff(user=user, project_key=pkey, since=since, until=until),
        lambda diff: dict(s.DiffOut(diff).data),
    )


async def graph_handoff(
    ctx: Context,
    project: Project,
    hours: Annotated[float, Field(gt=0, le=2160, description="Recent window.")] = 24,
    token_budget: Annotated[
        int | None,
        Field(ge=100, le=32000, description="Brief size in estimated tokens (default 1500)."),
    ] = None,
) -> CallToolResult:
    """A brief to pick up the project: active blockers, open tasks, the last session with
    work in it, decisions and plans with their reasons, unread messages, the project's
    memories, recent note changes (markdown + JSON). The session start already gave you one."""
    return await in_project(
        ctx,
        project,
        lambda user, pkey: handoff_build(
            user=user, project_key=pkey, hours=hours, token_budget=token_budget
        ),
        lambda brief: dict(s.HandoffOut(brief).data),
    )


async def entity_get(ctx: Context, project: Project, key: Key) -> CallToolResult:
    """One note of the project: front matter, body, and its current edges."""

    def run(user: User, pkey: str) -> Any:
        entity = sel.entity_get(user=user, project_key=pkey, key=key)
        entity.edge_views = sel.entity_edges(entity=entity)  # type: ignore[attr-defined]
        return entity

    return await in_project(ctx, project, run, lambda e: {"entity": s.EntityDetailOut(e).data})


TOOLS: list[Callable[..., Awaitable[CallToolResult]]] = [
    graph_search,
    graph_related,
    graph_blockers,
    graph_diff,
    graph_handoff,
    entity_get,
]


def _read(title: str) -> ToolAnnotations:
    return ToolAnnotations(title=title, read_only_hint=True, open_world_hint=False)


HINTS = {
    "graph_search": _read("Search project notes"),
    "graph_related": _read("Related notes"),
    "graph_blockers": _read("Stale blockers"),
    "graph_diff": _read("What changed in the notes"),
    "graph_handoff": _read("Handoff brief"),
    "entity_get": _read("One note"),
}
