"""What a reconcile plan does with each live entity whose file the manifest lacks, and why.

Deleting is the one thing reconcile can get wrong for good, so an entity is a deletion
candidate only when the manifest's machine has seen its current version: that machine wrote
it, or sent the same content (``Entity.seen_by``; for rows older than that record, the last
revision's machine). A checkout that is behind, or on another branch, lacks files it never
had: they are kept, with the reason. A file gone from its path whose content (same hash) or
front matter ``id`` is at a new path no entity holds is a move, not a deletion.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import F

from knowledge.models import Entity, Revision


@dataclass(frozen=True)
class Manifest:
    """A client's view of the project: roots, files present (path -> hash) and the front
    matter ``id`` of those whose id the client read."""

    roots: list[str]
    files: dict[str, str]
    ids: dict[str, str]


@dataclass
class Sorting:
    """The missing entities, sorted: deletion candidates, moves, and those kept, each with
    ``reason`` (a code) and ``why`` (a sentence)."""

    candidates: list[dict[str, Any]] = field(default_factory=list)
    moves: list[dict[str, Any]] = field(default_factory=list)
    kept: list[dict[str, Any]] = field(default_factory=list)


def sort_missing(live: list[Entity], manifest: Manifest, machine: str) -> Sorting:
    """Each live entity under the roots whose path the manifest lacks, as a candidate, a
    move or kept (entities whose file is present are neither: they stay)."""
    missing = sorted((e for e in live if e.path not in manifest.files), key=lambda e: e.key)
    seen = _seen(missing, machine)
    writers = _writers([e for e in missing if e.pk not in seen])
    held = {e.path for e in live}
    new_files = {p: h for p, h in manifest.files.items() if p not in held}
    claimed: set[str] = set()
    sorting = Sorting()
    for entity in missing:
        row = _row(entity)
        if entity.pk not in seen:
            sorting.kept.append({**row, **_unseen(entity, machine, writers.get(entity.pk))})
            continue
        targets = _moved_to(entity, new_files, manifest.ids)
        if len(targets) > 1 or (targets and targets[0][0] in claimed):
            where = ", ".join(sorted(t for t, _ in targets))
            sorting.kept.append(
                {
                    **row,
                    "reason": "ambiguous_move",
                    "why": f"its content is at {where}: "
                    "more than one place, so it is neither moved nor deleted",
                }
            )
            continue
        if targets:
            to, how = targets[0]
            claimed.add(to)
            sorting.moves.append({**row, "to": to, "reason": "moved", "why": how})
            continue
        sorting.candidates.append(
            {
                **row,
                "reason": "missing_and_seen",
                "why": f"its file is gone and machine {machine} has seen version "
                f"{entity.version} (it wrote or indexed it)",
            }
        )
    return sorting


def _row(entity: Entity) -> dict[str, Any]:
    return {
        "id": entity.pk,
        "key": entity.key,
        "path": entity.path,
        "title": entity.title,
        "version": entity.version,
    }


def _seen(missing: list[Entity], machine: str) -> set[int]:
    """The missing entities whose current version the machine has seen."""
    if not machine:
        return set()
    seen = {e.pk for e in missing if e.seen_by.get(machine) == e.version}
    rest = [e.pk for e in missing if e.pk not in seen]
    if rest:  # written before ``seen_by`` was kept: the current version's own revision
        seen |= set(
            Revision.objects.filter(entity_id__in=rest, machine=machine)
            .filter(version=F("entity__version"))
            .exclude(kind=Revision.Kind.CONFLICT)
            .values_list("entity_id", flat=True)
        )
    return seen


def _writers(unseen: list[Entity]) -> dict[int, str]:
    """Who wrote each entity's current version (the machine of its last revision)."""
    rows = (
        Revision.objects.filter(entity_id__in=[e.pk for e in unseen])
        .exclude(kind=Revision.Kind.CONFLICT)
        .order_by("entity_id", "number")
        .values_list("entity_id", "machine")
    )
    return dict(rows)


def _unseen(entity: Entity, machine: str, writer: str | None) -> dict[str, str]:
    if not machine:
        return {
            "reason": "no_machine",
            "why": "the manifest names no machine_key: only a machine that has seen an "
            "entity's current version may delete it",
        }
    by = f"machine {writer}" if writer else "a writer that named no machine"
    return {
        "reason": "not_seen",
        "why": f"machine {machine} has not seen version {entity.version} (last written by "
        f"{by}): this checkout may be behind or on another branch; sync it, or index the "
        "file from this machine, before deleting",
    }


def _moved_to(
    entity: Entity, new_files: dict[str, str], ids: dict[str, str]
) -> list[tuple[str, str]]:
    """The new files (held by no entity) that are this entity: its front matter id, or its
    content hash."""
    explicit = entity.front_matter.get("id")
    if explicit:
        by_id = [p for p, i in ids.items() if i == str(explicit) and p in new_files]
        if by_id:
            return [(p, f"front matter id {explicit!r} is now at {p}") for p in by_id]
    return [
        (p, f"the same content (sha-256) is now at {p}")
        for p, h in new_files.items()
        if h and h == entity.content_hash
    ]
