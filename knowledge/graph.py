"""A project's graph in memory, read in two queries: its live entities and its edges (alive
now, or at a given moment), with target resolution (key, then path, then file name) and the
inverse labels. Related, blockers and diff walk it; nothing here writes."""

from __future__ import annotations

from collections.abc import Iterable
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

    def resolve(self, target: str, by_path: dict[str, int], by_stem: dict[str, int]) -> int | None:
        return self.by_key.get(target) or by_path.get(target) or by_stem.get(target.casefold())


def project_graph(project: Project, *, at: datetime | None = None) -> Graph:
    """The project's live entities and edges now (``at=None``) or as they were at ``at``."""
    entities = Entity.objects.filter(project=project)
    edges = Edge.objects.filter(project=project)
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
    for row in entities.order_by("id").values_list(*NODE_FIELDS):
        node = Node(*row)
        graph.nodes[node.id] = node
        graph.by_key.setdefault(node.key, node.id)
        by_path.setdefault(node.path, node.id)
        by_stem.setdefault(stem(node.path), node.id)
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


def related(graph: Graph, root: int, *, depth: int) -> tuple[list[Step], list[Link]]:
    """Breadth-first to ``depth`` (1 or 2) in both directions; every node once (cycles end
    the walk), unresolved targets are leaves. Steps in walk order, edges each once."""
    seen: set[int | str] = {root}
    frontier = [root]
    steps: list[Step] = []
    edges: dict[tuple[int, str, str], Link] = {}
    for level in range(1, depth + 1):
        following: list[int] = []
        for current in frontier:
            via = graph.nodes[current].key
            for link, direction, other in _neighbours(graph, current):
                edges[(link.source, link.label, link.target)] = link
                name: int | str = other if other is not None else f"?{link.target}"
                if name in seen:
                    continue
                seen.add(name)
                label = link.label if direction == "out" else INVERSE[link.label]
                node = graph.nodes.get(other) if other is not None else None
                steps.append(
                    Step(node.key if node else link.target, node, level, label, direction, via)
                )
                if node is not None:
                    following.append(node.id)
        frontier = following
    return steps, list(edges.values())


def _neighbours(graph: Graph, current: int) -> Iterable[tuple[Link, str, int | None]]:
    for link in graph.out.get(current, []):
        yield link, "out", link.resolved
    for link in graph.into.get(current, []):
        yield link, "in", link.source
