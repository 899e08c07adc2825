"""Reads of the knowledge graph, with the isolation rules in one place: a project is read
through ``agents.selectors.project_get`` (the user's own, else a team-visible one of the user's
tenant; anything else is "not found"), and every entity read is bound to such a project."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Q, QuerySet

from agents.models import Project, Session
from agents.selectors import project_get, project_list
from agents.services.common import now
from agents.services.projects import project_key
from atlas_platform.exceptions import NotFound, ValidationError
from knowledge.graph import (
    INVERSE,
    Graph,
    Link,
    Node,
    Step,
    around,
    moved_entities,
    project_graph,
    related,
    resolve,
)
from knowledge.models import Edge, Entity, Revision
from knowledge.parsing import BLOCKED_STATUSES, DONE_STATUSES
from memory.public import searchable_search
from tenants.models import User

MAX_SEARCH_OWNERS = 20


def readable_project(*, user: User, key: str) -> Project:
    return project_get(user=user, key=key)


HEX_KEY = re.compile(r"^[0-9a-f]{64}$")
CURRENT = "current"


def project_named(*, user: User, name: str, agent_slug: str = "") -> Project:
    """A readable project as an agent knows it: its key (64 hex), ``current`` (the project of
    the agent's latest session with one: the token's agent, on the machine it last worked
    from), its git remote in any spelling (``git@host:o/r.git``, ``https://host/o/r``), or
    its name (one of the user's own; a name two projects share is a 400 naming their keys)."""
    ref = (name or "").strip()
    if HEX_KEY.match(ref):
        return readable_project(user=user, key=ref)
    if ref.lower() == CURRENT:
        return _current_project(user, agent_slug)
    if ":" in ref or ref.count("/") >= 2 or ref.endswith(".git"):
        key, _ = project_key(remote=ref)
        return readable_project(user=user, key=key)
    named = list(project_list(user=user).filter(name__iexact=ref)[:10])
    if len(named) == 1:
        return named[0]
    if named:
        keys = ", ".join(f"{p.key} ({p.remote or 'no remote'})" for p in named)
        raise ValidationError(
            f"{len(named)} projects are named {ref!r}; name one by key: {keys}.",
            code="ambiguous_project",
        )
    raise NotFound(
        f"No project {ref!r} for this user (give its key, name, git remote or 'current').",
        code="project_not_found",
    )


def _current_project(user: User, agent_slug: str) -> Project:
    if not agent_slug:
        raise ValidationError(
            "'current' needs a token bound to an agent; name the project by key or name.",
            code="no_current_project",
        )
    session = (
        Session.objects.for_caller(user)
        .filter(agent__slug=agent_slug, project__isnull=False)
        .select_related("project")
        .order_by("-last_activity_at", "-id")
        .first()
    )
    if session is None or session.project is None:
        raise NotFound(
            f"Agent {agent_slug!r} has no session in a project yet; name the project.",
            code="no_current_project",
        )
    return session.project


def entity_get(*, user: User, project_key: str, key: str, deleted: bool = False) -> Entity:
    """A live entity (or, with ``deleted``, also a tombstone) of a readable project."""
    project = readable_project(user=user, key=project_key)
    rows = Entity.objects.filter(project=project, key=key).select_related("project")
    if not deleted:
        rows = rows.filter(deleted_at__isnull=True)
    entity = rows.first() or _moved_from(project, key)
    if entity is None:
        raise NotFound(f"No entity {key!r} in this project.", code="entity_not_found")
    return entity


def entity_named(*, user: User, project_key: str, name: str) -> Entity:
    """A live entity by what a note's front matter may call it: its key, else its path, else
    its file name (``[[stem]]``, any case, ``.md`` or not), else its title (any case, when only
    one has it)."""
    project = readable_project(user=user, key=project_key)
    names = [name, name.removesuffix(".md")] if name.endswith(".md") else [name]
    found = resolve(project, set(names))
    node = next((found[n] for n in names if n in found), None)
    if node is not None:
        return entity_get(user=user, project_key=project_key, key=node.key)
    titled = list(
        Entity.objects.filter(project=project, deleted_at__isnull=True, title__iexact=name)
        .select_related("project")
        .order_by("id")[:2]
    )
    if len(titled) == 1:
        return titled[0]
    if titled:
        raise ValidationError(
            f"More than one entity is titled {name!r}; name it by key or path.",
            code="ambiguous_entity",
        )
    raise NotFound(f"No entity {name!r} in this project.", code="entity_not_found")


def _moved_from(project: Project, key: str) -> Entity | None:
    """The live entity that had ``key`` (or that path or file name) before it moved."""
    node = moved_entities(project, {key}).get(key)
    if node is None:
        return None
    return Entity.objects.filter(pk=node.id).select_related("project").first()


def entity_revisions(*, user: User, project_key: str, key: str) -> list[Revision]:
    entity = entity_get(user=user, project_key=project_key, key=key, deleted=True)
    return list(entity.revisions.order_by("number"))


@dataclass(frozen=True)
class EdgeView:
    label: str
    direction: str
    key: str
    title: str | None
    resolved: bool


def entity_edges(*, entity: Entity) -> list[EdgeView]:
    """The entity's current edges both ways (incoming with their inverse label)."""
    links, nodes = around(entity.project, entity)
    views = []
    for link, direction, other in links:
        node = nodes.get(other) if other is not None else None
        if direction == "out":
            key = node.key if node else link.target
            views.append(EdgeView(link.label, "out", key, _title(node), node is not None))
        elif node is not None:
            views.append(EdgeView(INVERSE[link.label], "in", node.key, node.title, True))
    return views


def _title(node: Node | None) -> str | None:
    return node.title if node is not None else None


# --- search -------------------------------------------------------------------------------
@dataclass(frozen=True)
class SearchHit:
    rank: int
    score: float
    entity: Entity
    snippet: str


def graph_search(
    *,
    user: User,
    query: str,
    project_key: str | None = None,
    types: list[str] | None = None,
    statuses: list[str] | None = None,
    updated_since: datetime | None = None,
    updated_before: datetime | None = None,
    k: int = 10,
    include_team: bool = False,
) -> list[SearchHit]:
    """Hybrid search (lexical + dense, the tenant's decay) over the entities the user may
    read: their own (one project, or all), plus team-visible projects of the tenant when a
    project is named or ``include_team``. Filters are applied to the entities' rows."""
    if not isinstance(query, str) or not query.strip():
        raise ValidationError("query must not be empty.", code="bad_query")
    if not 1 <= k <= 50:
        raise ValidationError("k must be between 1 and 50.", code="bad_k")
    if project_key:
        projects = [readable_project(user=user, key=project_key)]
    else:
        projects = list(project_list(user=user, include_team=include_team))
    allowed = {p.pk for p in projects}
    owners = {user.pk: user}
    for project in projects:
        owners.setdefault(project.user_id, project.user)
    if len(owners) > MAX_SEARCH_OWNERS:
        owners = dict(list(owners.items())[:MAX_SEARCH_OWNERS])
    filtered = bool(types or statuses or updated_since or updated_before or project_key)
    candidates = 500 if filtered else 200
    scored: dict[str, tuple[float, int]] = {}
    for owner in owners.values():
        among = None if owner.pk == user.pk else _readable_docs(owner, allowed)
        for hit in searchable_search(
            user=owner, query=query, candidates=candidates, read=False, among=among
        ):
            scored.setdefault(hit.id, (hit.score, hit.rank))
    rows = Entity.objects.filter(
        doc_id__in=list(scored), project_id__in=allowed, user_id__in=list(owners), deleted_at=None
    ).select_related("project")
    if types:
        rows = rows.filter(type__in=types)
    if statuses:
        rows = rows.filter(status__in=statuses)
    if updated_since:
        rows = rows.filter(updated_at__gte=updated_since)
    if updated_before:
        rows = rows.filter(updated_at__lt=updated_before)
    ordered = sorted(rows, key=lambda e: (-scored[e.doc_id][0], scored[e.doc_id][1], e.pk))[:k]
    terms = [t for t in query.lower().split() if len(t) > 2]
    return [
        SearchHit(n, scored[e.doc_id][0], e, _snippet(e.body, terms))
        for n, e in enumerate(ordered, start=1)
    ]


def _readable_docs(owner: User, projects: set[int]) -> list[str]:
    """Another user's documents the caller may read: the live entities of the readable
    (team-visible) projects among ``projects``. Only these are ranked: ranked against the
    owner's private notes, a score would tell whether those hold the query's words."""
    return list(
        Entity.objects.filter(
            user=owner, project_id__in=projects, deleted_at=None, project__team_visible=True
        ).values_list("doc_id", flat=True)
    )


def _snippet(body: str, terms: list[str], width: int = 200) -> str:
    lower = body.lower()
    at = min((i for i in (lower.find(t) for t in terms) if i >= 0), default=0)
    start = max(0, at - width // 4)
    return " ".join(body[start : start + width].split())


# --- related ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Related:
    root: Entity
    steps: list[Step]
    edges: list[tuple[str, str, str, bool]]  # (from key, to key or target, label, resolved)


def graph_related(*, user: User, project_key: str, key: str, depth: int = 1) -> Related:
    """What relates to the entity, to ``depth`` 1 or 2, both directions, cycle-safe. The
    entity is named as front matter names one: its key, path, file name or title."""
    if depth not in (1, 2):
        raise ValidationError("depth must be 1 or 2.", code="bad_depth")
    root = entity_named(user=user, project_key=project_key, name=key)
    steps, links, nodes = related(root.project, root, depth=depth)
    return Related(root, steps, [_edge(nodes, link) for link in links])


def _edge(nodes: dict[int, Node], link: Link) -> tuple[str, str, str, bool]:
    target = nodes.get(link.resolved) if link.resolved else None
    to = target.key if target else link.target
    return (nodes[link.source].key, to, link.label, target is not None)


# --- blockers -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Blocker:
    key: str
    title: str | None
    status: str | None
    resolved: bool
    last_changed_at: datetime
    idle_days: float


@dataclass(frozen=True)
class Blocked:
    entity: Node
    blockers: list[Blocker] = field(default_factory=list)


def graph_blockers(*, user: User, project_key: str, stale_days: float = 3) -> list[Blocked]:
    """Blocked or waiting entities whose blocker has not moved for ``stale_days``: an entity
    with status blocked / waiting or a ``blocked_by`` / ``depends_on`` edge to an entity that
    is not done (or does not exist yet). A blocker's last move is its last change (an
    unresolved one: when the edge was added); a blocked entity without a named blocker is its
    own (its last status change)."""
    if not 0 <= stale_days <= 3650:
        raise ValidationError("stale_days must be between 0 and 3650.", code="bad_stale_days")
    project = readable_project(user=user, key=project_key)
    return blocked_entities(project, now(), stale_days)


BLOCKING = ("blocked_by", "depends_on")


def blocked_entities(project: Project, moment: datetime, stale_days: float) -> list[Blocked]:
    """``graph_blockers`` for a project the caller may read (the handoff's section)."""
    return _blocked(project_graph(project, labels=BLOCKING), moment, stale_days)


def _blocked(graph: Graph, moment: datetime, stale_days: float) -> list[Blocked]:
    horizon = moment - timedelta(days=stale_days)
    out = []
    for node in graph.nodes.values():
        if node.status in DONE_STATUSES:
            continue
        found = []
        links = [
            link
            for link in graph.out.get(node.id, [])
            if link.label in ("blocked_by", "depends_on")
        ]
        for link in links:
            blocker = graph.nodes.get(link.resolved) if link.resolved else None
            if blocker is not None and blocker.status in DONE_STATUSES:
                continue
            moved = blocker.updated_at if blocker is not None else link.added_at
            if moved <= horizon:
                found.append(_blocker(link, blocker, moved, moment))
        open_links = [
            link
            for link in links
            if not (
                link.resolved
                and graph.nodes.get(link.resolved)
                and graph.nodes[link.resolved].status in DONE_STATUSES
            )
        ]
        if not open_links and node.status in BLOCKED_STATUSES and node.status_changed_at <= horizon:
            found.append(
                Blocker(
                    node.key,
                    node.title,
                    node.status,
                    True,
                    node.status_changed_at,
                    _days(moment - node.status_changed_at),
                )
            )
        if found:
            out.append(Blocked(node, found))
    return sorted(out, key=lambda b: (-max(x.idle_days for x in b.blockers), b.entity.key))


def _blocker(link: Link, blocker: Node | None, moved: datetime, moment: datetime) -> Blocker:
    return Blocker(
        key=blocker.key if blocker else link.target,
        title=blocker.title if blocker else None,
        status=blocker.status if blocker else None,
        resolved=blocker is not None,
        last_changed_at=moved,
        idle_days=_days(moment - moved),
    )


def _days(delta: timedelta) -> float:
    return round(delta.total_seconds() / 86400.0, 2)


# --- diff ---------------------------------------------------------------------------------
@dataclass
class Diff:
    since: datetime
    until: datetime
    created: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    status_changes: list[dict[str, Any]] = field(default_factory=list)
    newly_blocked: list[str] = field(default_factory=list)
    unblocked: list[str] = field(default_factory=list)
    completed: list[str] = field(default_factory=list)
    edges_added: list[dict[str, str]] = field(default_factory=list)
    edges_removed: list[dict[str, str]] = field(default_factory=list)
    rewritten: list[dict[str, Any]] = field(default_factory=list)


DEFAULT_REWRITE_THRESHOLD = 0.25


def graph_diff(
    *,
    user: User,
    project_key: str,
    since: datetime,
    until: datetime,
    rewrite_threshold: float = DEFAULT_REWRITE_THRESHOLD,
) -> Diff:
    """What changed in the project between two moments: entities created, deleted and
    restored, status transitions (and which became blocked, unblocked, completed), edges
    added and removed (the graph at ``since`` against the graph at ``until``), and entities
    ``rewritten``: the cosine distance between their embeddings at both ends is above
    ``rewrite_threshold`` (their meaning changed, whatever the status says)."""
    if since >= until:
        raise ValidationError("since must be before until.", code="bad_time_range")
    if not 0.0 < rewrite_threshold <= 2.0:
        raise ValidationError("rewrite_threshold must be in (0, 2].", code="bad_threshold")
    project = readable_project(user=user, key=project_key)
    diff = Diff(since=since, until=until)
    revisions = (
        Revision.objects.filter(entity__project=project, created_at__lte=until)
        .exclude(kind=Revision.Kind.CONFLICT)
        .order_by("entity_id", "number")
        .values_list("entity_id", "entity__key", "kind", "status", "created_at", "embedding")
    )
    before: dict[int, tuple[str, str, list[float] | None]] = {}
    after: dict[int, tuple[str, str, list[float] | None]] = {}
    keys: dict[int, str] = {}
    for entity_id, key, kind, status, at, embedding in revisions:
        keys[entity_id] = key
        state = (kind, status, embedding)
        if at <= since:
            before[entity_id] = state
        else:
            _window_event(diff, kind, key)
        after[entity_id] = state
    old_edges = _edge_set(project, since)
    new_edges = _edge_set(project, until)
    old_blocked = _blocked_keys(project, since, before, keys)
    new_blocked = _blocked_keys(project, until, after, keys)
    for entity_id in sorted(after, key=lambda i: keys[i]):
        key = keys[entity_id]
        was, now_ = before.get(entity_id), after[entity_id]
        was_live = was is not None and was[0] != Revision.Kind.DELETED
        if not was_live or now_[0] == Revision.Kind.DELETED:
            continue
        assert was is not None  # noqa: S101 - was_live says so
        if was[1] != now_[1]:
            diff.status_changes.append({"key": key, "from": was[1], "to": now_[1]})
            if now_[1] in DONE_STATUSES and was[1] not in DONE_STATUSES:
                diff.completed.append(key)
        distance = _distance(was[2], now_[2])
        if distance is not None and distance > rewrite_threshold:
            diff.rewritten.append({"key": key, "distance": round(distance, 4)})
    diff.newly_blocked = sorted(new_blocked - old_blocked)
    diff.unblocked = sorted(
        k
        for k in old_blocked - new_blocked
        if k in {keys[i] for i in after if after[i][0] != "deleted"}
    )
    diff.edges_added = [_edge_json(e) for e in sorted(new_edges - old_edges)]
    diff.edges_removed = [_edge_json(e) for e in sorted(old_edges - new_edges)]
    for name in ("created", "deleted", "restored"):
        setattr(diff, name, sorted(set(getattr(diff, name))))
    return diff


def _window_event(diff: Diff, kind: str, key: str) -> None:
    if kind == Revision.Kind.CREATED:
        diff.created.append(key)
    elif kind == Revision.Kind.DELETED:
        diff.deleted.append(key)
    elif kind == Revision.Kind.RESTORED:
        diff.restored.append(key)


def _edge_set(project: Project, at: datetime) -> set[tuple[str, str, str]]:
    rows = (
        Edge.objects.filter(project=project, added_at__lte=at)
        .filter(Q(removed_at__isnull=True) | Q(removed_at__gt=at))
        .values_list("source__key", "label", "target")
    )
    return set(rows)


def _edge_json(edge: tuple[str, str, str]) -> dict[str, str]:
    return {"from": edge[0], "label": edge[1], "to": edge[2]}


def _blocked_keys(
    project: Project,
    at: datetime,
    states: dict[int, tuple[str, str, list[float] | None]],
    keys: dict[int, str],
) -> set[str]:
    """Entities blocked at ``at``: status blocked / waiting, or an alive ``blocked_by`` edge
    (to a target that was not done then)."""
    live = {i: s for i, s in states.items() if s[0] != Revision.Kind.DELETED}
    done_keys = {keys[i] for i, s in live.items() if s[1] in DONE_STATUSES}
    blocked = {keys[i] for i, s in live.items() if s[1] in BLOCKED_STATUSES}
    live_keys = {keys[i] for i in live}
    not_done = live_keys - done_keys
    for source, label, target in _edge_set(project, at):
        if label == "blocked_by" and source in not_done and target not in done_keys:
            blocked.add(source)
    return blocked


def _distance(a: list[float] | None, b: list[float] | None) -> float | None:
    if not a or not b or len(a) != len(b):
        return None
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    if na == 0 or nb == 0:
        return None
    return 1.0 - dot / (na * nb)


def entities_of(*, user: User, project_key: str) -> QuerySet[Entity]:
    """A readable project's live entities (for the admin and the handoff)."""
    project = readable_project(user=user, key=project_key)
    return Entity.objects.filter(project=project, deleted_at__isnull=True)
