"""A project's graph in memory, read in two queries: its live entities and its edges (alive
now, or at a given moment), with target resolution (key, then path, then file name) and the
inverse labels. Related, blockers and diff walk it; nothing here writes."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Q

from agents.models import Project
from knowledge.models import Edge, Entity
from knowledge.parsing import stem

INVERSE = {
    "blocked_by": "blocks",
    "depends_on": "required_by",
    "part_of": "has_part",
    "relates_to": "referenced_by",
}
NODE_FIELDS = (
    "id",
    "key",
    "path",
    "title",
    "type",
    "status",
    "priority",
    "updated_at",
    "status_changed_at",
    "created_at",
)


@dataclass(frozen=True)
class Node:
    id: int
    key: str
    path: str
    title: str
    type: str
    status: str
    priority: str
    updated_at: datetime
    status_changed_at: datetime
    created_at: datetime


@dataclass(frozen=True)
class Link:
    source: int  # entity id
    label: str
    target: str  # as written
    resolved: int | None  # entity id, if the target exists
    added_at: datetime


@dataclass
class Graph:
    nodes: dict[int, Node] = field(default_factory=dict)
    out: dict[int, list[Link]] = field(default_factory=dict)
    into: dict[int, list[Link]] = field(default_factory=dict)
    by_key: dict[str, int] = field(default_factory=dict)
    aliases: dict[str, int] = field(default_factory=dict)  # former names, case-folded

    def resolve(self, target: str, by_path: dict[str, int], by_stem: dict[str, int]) -> int | None:
        return (
            self.by_key.get(target)
            or by_path.get(target)
            or by_stem.get(target.casefold())
            or self.aliases.get(target.casefold())
        )


def alias_names(aliases: list[dict[str, str]]) -> set[str]:
    """The names an entity had before it moved (its old keys, paths and file names), as a
    link may write them: case-folded."""
    names = set()
    for alias in aliases:
        if alias.get("key"):
            names.add(alias["key"].casefold())
        if alias.get("path"):
            names.update((alias["path"].casefold(), stem(alias["path"])))
    return names


def project_graph(
    project: Project, *, at: datetime | None = None, labels: tuple[str, ...] = ()
) -> Graph:
    """The project's live entities and edges now (``at=None``) or as they were at ``at``
    (only edges with ``labels``, when given)."""
    entities = Entity.objects.filter(project=project)
    edges = Edge.objects.filter(project=project)
    if labels:
        edges = edges.filter(label__in=labels)
    if at is None:
        entities = entities.filter(deleted_at__isnull=True)
        edges = edges.filter(removed_at__isnull=True, source__deleted_at__isnull=True)
    else:
        entities = entities.filter(created_at__lte=at).filter(
            Q(deleted_at__isnull=True) | Q(deleted_at__gt=at)
        )
        edges = edges.filter(added_at__lte=at).filter(
            Q(removed_at__isnull=True) | Q(removed_at__gt=at)
        )
    graph = Graph()
    by_path: dict[str, int] = {}
    by_stem: dict[str, int] = {}
    for *row, aliases in entities.order_by("id").values_list(*NODE_FIELDS, "aliases"):
        node = Node(*row)
        graph.nodes[node.id] = node
        graph.by_key.setdefault(node.key, node.id)
        by_path.setdefault(node.path, node.id)
        by_stem.setdefault(stem(node.path), node.id)
        for name in alias_names(aliases):
            graph.aliases.setdefault(name, node.id)
    rows = edges.order_by("source_id", "label", "target").values_list(
        "source_id", "label", "target", "added_at"
    )
    for source, label, target, added_at in rows:
        if source not in graph.nodes:
            continue
        link = Link(source, label, target, graph.resolve(target, by_path, by_stem), added_at)
        graph.out.setdefault(source, []).append(link)
        if link.resolved is not None:
            graph.into.setdefault(link.resolved, []).append(link)
    return graph


@dataclass(frozen=True)
class Step:
    """One node reached by ``related``: the entity (or an unresolved target), its depth, the
    label seen from the node it was reached from, and that node's key."""

    key: str
    node: Node | None
    depth: int
    label: str
    direction: str  # out | in
    via: str


def resolve(project: Project, targets: set[str]) -> dict[str, Node]:
    """The live entities the targets name: by key, else by path, else by file name."""
    if not targets:
        return {}
    folded = {t.casefold() for t in targets}
    rows = (
        Entity.objects.filter(project=project, deleted_at__isnull=True)
        .filter(Q(key__in=targets) | Q(path__in=targets) | Q(stem__in=folded))
        .order_by("id")
        .values_list(*NODE_FIELDS, "stem")
    )
    by_key: dict[str, Node] = {}
    by_path: dict[str, Node] = {}
    by_stem: dict[str, Node] = {}
    for *fields, name in rows:
        node = Node(*fields)
        by_key.setdefault(node.key, node)
        by_path.setdefault(node.path, node)
        by_stem.setdefault(name, node)
    found: dict[str, Node] = {}
    for target in targets:
        hit = by_key.get(target) or by_path.get(target) or by_stem.get(target.casefold())
        if hit is not None:
            found[target] = hit
    missing = targets - set(found)
    if missing:
        found.update(moved_entities(project, missing))
    return found


def moved_entities(project: Project, targets: set[str]) -> dict[str, Node]:
    """Targets that name a live entity's former name (it moved): the project's moved
    entities are few, so they are read whole."""
    named: dict[str, Node] = {}
    rows = (
        Entity.objects.filter(project=project, deleted_at__isnull=True)
        .exclude(aliases=[])
        .order_by("id")
        .values_list(*NODE_FIELDS, "aliases")
    )
    for *fields, aliases in rows:
        node = Node(*fields)
        for name in alias_names(aliases):
            named.setdefault(name, node)
    return {t: named[t.casefold()] for t in targets if t.casefold() in named}


def _node(entity: Entity) -> Node:
    return Node(*(getattr(entity, name) for name in NODE_FIELDS))


def related(
    project: Project, root: Entity, *, depth: int
) -> tuple[list[Step], list[Link], dict[int, Node]]:
    """Breadth-first from ``root`` to ``depth`` (1 or 2) in both directions, reading only the
    edges around each level (a few indexed queries per level, whatever the project's size);
    every node once (cycles end the walk), unresolved targets are leaves."""
    nodes: dict[int, Node] = {root.pk: _node(root)}
    seen: set[int | str] = {root.pk}
    frontier = [root.pk]
    steps: list[Step] = []
    edges: dict[tuple[int, str, str], Link] = {}
    for level in range(1, depth + 1):
        following: list[int] = []
        for link, direction, other in _around(project, [nodes[i] for i in frontier], nodes):
            edges[(link.source, link.label, link.target)] = link
            name: int | str = other if other is not None else f"?{link.target}"
            current = link.source if direction == "out" else link.resolved
            if name in seen:
                continue
            seen.add(name)
            label = link.label if direction == "out" else INVERSE[link.label]
            node = nodes.get(other) if other is not None else None
            via = nodes[current].key if current is not None else ""
            steps.append(
                Step(node.key if node else link.target, node, level, label, direction, via)
            )
            if node is not None:
                following.append(node.id)
        frontier = following
        if not frontier:
            break
    return steps, list(edges.values()), nodes


def around(
    project: Project, root: Entity
) -> tuple[list[tuple[Link, str, int | None]], dict[int, Node]]:
    """The entity's live edges both ways, with the nodes at their other ends."""
    nodes = {root.pk: _node(root)}
    return _around(project, [nodes[root.pk]], nodes), nodes


EDGE_FIELDS = ("source_id", "label", "target", "added_at")


def _around(
    project: Project, frontier: list[Node], nodes: dict[int, Node]
) -> list[tuple[Link, str, int | None]]:
    """The live edges out of and into the frontier's nodes (``nodes`` learns the other ends)."""
    ids = [n.id for n in frontier]
    live = Edge.objects.filter(project=project, removed_at__isnull=True).filter(
        source__deleted_at__isnull=True
    )
    outgoing = list(
        live.filter(source_id__in=ids)
        .order_by("source_id", "label", "target")
        .values_list(*EDGE_FIELDS)
    )
    names = {ref for n in frontier for ref in (n.key.casefold(), n.path.casefold(), stem(n.path))}
    for aliases in (
        Entity.objects.filter(pk__in=ids).exclude(aliases=[]).values_list("aliases", flat=True)
    ):
        names |= alias_names(aliases)
    incoming = list(
        live.filter(ref__in=names)
        .exclude(source_id__in=ids)
        .order_by("source_id", "label", "target")
        .values_list(*EDGE_FIELDS)
    ) + [row for row in outgoing if row[2].casefold() in names]
    targets = resolve(project, {row[2] for row in outgoing} | {row[2] for row in incoming})
    sources = {row[0] for row in incoming} - set(nodes)
    for fields in Entity.objects.filter(pk__in=sources).values_list(*NODE_FIELDS):
        nodes[fields[0]] = Node(*fields)
    for node in targets.values():
        nodes.setdefault(node.id, node)
    mine = set(ids)
    around: list[tuple[Link, str, int | None]] = []
    for source, label, target, added_at in outgoing:
        hit = targets.get(target)
        link = Link(source, label, target, hit.id if hit else None, added_at)
        around.append((link, "out", link.resolved))
    for source, label, target, added_at in incoming:
        hit = targets.get(target)
        if hit is None or hit.id not in mine:
            continue  # names a frontier node's key or file name, but resolves elsewhere
        around.append((Link(source, label, target, hit.id, added_at), "in", source))
    return around
