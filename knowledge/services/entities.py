"""Writing entities: upsert from a note (created / updated / unchanged / conflict / restored),
tombstones and restores, and keeping each entity's searchable document in step.

Order of work (CONTRIBUTING "Transactions hold database rows only"): parse and embed first,
then one transaction for the entity, its revision, its edges and the audit event, then the
store write of the searchable document. A store that is down leaves ``indexed_version``
behind ``version``; ``entities_reindex`` (the beat task, ``manage.py knowledge_reindex``)
catches up, so nothing written is lost and search follows within minutes.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q

from agents.selectors import own_project
from agents.services.common import client_id, now
from atlas_platform.exceptions import AtlasError, Conflict, NotFound, ValidationError
from knowledge.models import Edge, Entity, Revision
from knowledge.parsing import ParsedNote, clean_path, derived_key, parse_note, stem
from memory.public import searchable_delete, searchable_embed, searchable_put
from tenants.models import User
from tenants.services.audit import AuditEntry, audit_record

logger = logging.getLogger(__name__)

FIELDS = ("type", "title", "status", "priority", "initiative", "tags", "path", "front_matter")


@dataclass(frozen=True)
class Upserted:
    """What an upsert did: ``outcome`` created | updated | unchanged | conflict | restored |
    moved."""

    outcome: str
    entity: Entity
    revision: Revision | None = None
    conflict_revision: Revision | None = None

    @property
    def created(self) -> bool:
        return self.outcome == "created"


def _vector(values: list[float]) -> list[float]:
    return [round(v, 5) for v in values]


def _revision(
    entity: Entity,
    kind: str,
    *,
    moment: datetime,
    note: ParsedNote | None = None,
    base_version: int | None = None,
    machine: str = "",
    changed: Sequence[str] = (),
    embedding: list[float] | None = None,
    added: Iterable[tuple[str, str]] = (),
    removed: Iterable[tuple[str, str]] = (),
) -> Revision:
    last = entity.revisions.order_by("-number").values_list("number", flat=True).first() or 0
    revision = revision_row(
        entity,
        kind,
        number=last + 1,
        moment=moment,
        note=note,
        base_version=base_version,
        machine=machine,
        changed=changed,
        embedding=embedding,
        added=added,
        removed=removed,
    )
    revision.save(force_insert=True)
    return revision


def revision_row(
    entity: Entity,
    kind: str,
    *,
    number: int,
    moment: datetime,
    note: ParsedNote | None = None,
    base_version: int | None = None,
    machine: str = "",
    changed: Sequence[str] = (),
    embedding: list[float] | None = None,
    added: Iterable[tuple[str, str]] = (),
    removed: Iterable[tuple[str, str]] = (),
) -> Revision:
    """The entity's revision ``number`` (not saved: a batch writes its revisions at once)."""
    source: Any = note if note is not None else entity
    return Revision(
        entity=entity,
        number=number,
        kind=kind,
        version=entity.version,
        base_version=base_version,
        machine=machine,
        changed=list(changed),
        title=source.title,
        status=source.status,
        path=source.path,
        front_matter=source.front_matter,
        body=source.body,
        content_hash=source.content_hash,
        embedding=embedding,
        edges_added=[list(e) for e in sorted(added)],
        edges_removed=[list(e) for e in sorted(removed)],
        created_at=moment,
    )


def _open_edges(entity: Entity) -> dict[tuple[str, str], Edge]:
    return {(e.label, e.target): e for e in entity.edges.filter(removed_at__isnull=True)}


def _set_edges(
    entity: Entity, wanted: Iterable[tuple[str, str]], moment: datetime
) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """Close the edges no longer declared, open the new ones: (added, removed)."""
    current = _open_edges(entity)
    added, removed = edge_changes(current, wanted)
    if removed:
        Edge.objects.filter(pk__in=[current[e].pk for e in removed]).update(removed_at=moment)
    Edge.objects.bulk_create(edge_rows(entity, added, moment))
    return added, removed


def edge_changes(
    current: dict[tuple[str, str], Edge], wanted: Iterable[tuple[str, str]]
) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    """The edges to open and the ones to close: (added, removed)."""
    want = set(wanted)
    return want - set(current), set(current) - want


def edge_rows(entity: Entity, added: Iterable[tuple[str, str]], moment: datetime) -> list[Edge]:
    """The entity's new edges (not saved)."""
    return [
        Edge(
            project_id=entity.project_id,
            source=entity,
            label=label,
            target=target,
            ref=target.casefold(),
            added_at=moment,
        )
        for label, target in sorted(added)
    ]


def apply_note(entity: Entity, note: ParsedNote) -> list[str]:
    """Copy the note onto the entity; the names of the fields that changed."""
    changed = [f for f in FIELDS if getattr(entity, f) != getattr(note, f)]
    if entity.body != note.body:
        changed.append("body")
    for name in (*FIELDS, "body", "content_hash"):
        setattr(entity, name, getattr(note, name))
    entity.stem = stem(note.path)
    return changed


def _audit(action: str, entity: Entity, **extra: Any) -> None:
    """Ids and versions only: never a title, a body or front matter."""
    entry = audit_row(action, entity, **extra)
    audit_record(
        action=entry.action,
        tenant=entry.tenant,
        subject_user=entry.subject_user,
        target=entity,
        metadata=entry.metadata,
    )


def audit_row(action: str, entity: Entity, **extra: Any) -> AuditEntry:
    """The entity's audit event, for ``audit_record_many`` (a block's events at once): ids
    and versions only, never a title, a body or front matter."""
    return AuditEntry(
        action=action,
        tenant=entity.user.tenant,
        subject_user=entity.user,
        target=entity,
        metadata={
            "project": entity.project.key,
            "entity_id": entity.pk,
            "version": entity.version,
            **extra,
        },
    )


def entity_upsert(
    *,
    user: User,
    project_key: str,
    path: str,
    content: str,
    base_version: int | None = None,
    machine_key: str | None = None,
    content_hash: str | None = None,
    moved_from: str | None = None,
) -> Upserted:
    """Index one markdown note of the user's project (see ``knowledge`` for the rules).

    ``base_version`` is the version the writer last saw. The same content as the current
    version is ``unchanged``. A base that is not the current version (or none, for an entity
    that exists with other content) is a ``conflict``: the current version stays, the write
    is kept as a conflict revision and the entity is flagged; nothing is overwritten. A
    tombstoned entity written again is ``restored`` with the new content.

    A note at a new path is ``moved`` (same entity, history continued, its old key and path
    kept as aliases so links to them resolve): an entity whose front matter ``id`` is the
    note's, found at another path; or, with ``moved_from`` (the path the file was moved
    from), the live entity there."""
    project = own_project(user=user, key=project_key)
    note, machine, source = upsert_input(
        path=path,
        content=content,
        content_hash=content_hash,
        machine_key=machine_key,
        moved_from=moved_from,
    )
    # The same content again (a sync re-sending every file, a move) needs no embedding.
    known = Entity.objects.filter(project=project, content_hash=note.content_hash, deleted_at=None)
    same = known.filter(Q(key=note.key) | Q(path=source or note.path)).exists()
    vector = None if same else _embed(note)
    moment = now()
    for _ in range(3):
        try:
            done = _write(user, project, note, base_version, machine, vector, moment, source)
            break
        except IntegrityError:  # created concurrently by another writer: decide against it
            continue
        except _NeedsVector:  # it changed since the check: embed (outside the transaction)
            vector = _embed(note)
    else:
        done = _write(user, project, note, base_version, machine, vector, moment, source)
    if done.outcome in ("created", "updated", "restored", "moved"):
        embedding = vector if vector is not None else _last_embedding(done.entity)
        entity_index(entity=done.entity, embedding=embedding)
    return done


def upsert_input(
    *,
    path: str,
    content: str,
    content_hash: str | None = None,
    machine_key: str | None = None,
    moved_from: str | None = None,
) -> tuple[ParsedNote, str, str | None]:
    """An upsert's note, checked: (the parsed note, the machine key or "", the path it moved
    from or None)."""
    note = parse_note(path=path, content=content)
    if content_hash is not None and content_hash.lower() != note.content_hash:
        raise ValidationError("content_hash is not the SHA-256 of content.", code="hash_mismatch")
    machine = client_id(machine_key, field="machine_key") if machine_key else ""
    source = clean_path(moved_from) if moved_from else None
    return note, machine, None if source == note.path else source


class _NeedsVector(Exception):
    """The write needs the note's embedding, which was skipped (the content looked known)."""


def _embed(note: ParsedNote) -> list[float]:
    return _vector(searchable_embed(texts=[note.search_text])[0])


def _last_embedding(entity: Entity) -> list[float] | None:
    found = (
        entity.revisions.exclude(embedding=None)
        .exclude(kind=Revision.Kind.CONFLICT)
        .order_by("-number")
        .values_list("embedding", flat=True)
        .first()
    )
    return list(found) if found else None


def _locked(project: Any, **where: Any) -> Entity | None:
    return (
        Entity.objects.select_for_update()
        .select_related("project", "user__tenant")
        .filter(project=project, **where)
        .order_by("pk")
        .first()
    )


def _write(
    user: User,
    project: Any,
    note: ParsedNote,
    base_version: int | None,
    machine: str,
    given: list[float] | None,
    moment: datetime,
    source: str | None = None,
) -> Upserted:
    with transaction.atomic():
        done = _decide(user, project, note, base_version, machine, given, moment, source)
        if machine and done.outcome != "conflict":
            _mark_seen(done.entity, machine)
        return done


def _decide(
    user: User,
    project: Any,
    note: ParsedNote,
    base_version: int | None,
    machine: str,
    given: list[float] | None,
    moment: datetime,
    source: str | None,
) -> Upserted:
    entity = _locked(project, key=note.key)
    if (entity is None or entity.deleted_at is not None) and source is not None:
        mover = _locked(project, path=source, deleted_at=None)
        if mover is not None:
            move = Move(base_version, machine, given, moment, displaced=entity)
            return _move(mover, note, move)
    if entity is None or entity.deleted_at is not None:
        if given is None:
            raise _NeedsVector
        if entity is None:
            return _create(user, project, note, machine, given, moment)
        return _revive(entity, note, base_version, machine, given, moment)
    if entity.path != note.path:  # the same front matter id at another path
        return _move(entity, note, Move(base_version, machine, given, moment))
    if entity.content_hash == note.content_hash:
        if entity.conflicted and base_version == entity.version:
            entity.conflicted = False  # the writer saw the current version: resolved
            entity.save(update_fields=["conflicted"])
            _audit("entity.resolve", entity)
        return Upserted("unchanged", entity)
    if given is None:
        raise _NeedsVector
    if base_version != entity.version:
        return _conflict(entity, note, base_version, machine, given, moment)
    return _update(entity, note, base_version, machine, given, moment)


def _mark_seen(entity: Entity, machine: str) -> None:
    if mark_seen(entity, machine):
        entity.save(update_fields=["seen_by"])


def mark_seen(entity: Entity, machine: str) -> bool:
    """The machine has this version (it wrote it, or sent the same content): reconcile from
    that machine may delete the entity once its file is gone. True: ``seen_by`` changed (the
    caller saves)."""
    if entity.seen_by.get(machine) == entity.version:
        return False
    seen = {k: v for k, v in entity.seen_by.items() if k != machine}
    seen[machine] = entity.version
    entity.seen_by = dict(list(seen.items())[-MAX_SEEN_BY:])
    return True


MAX_SEEN_BY = 50


def _conflict(
    entity: Entity,
    note: ParsedNote,
    base_version: int | None,
    machine: str,
    vector: list[float],
    moment: datetime,
) -> Upserted:
    entity.conflicted = True
    entity.save(update_fields=["conflicted"])
    revision = _revision(
        entity,
        Revision.Kind.CONFLICT,
        moment=moment,
        note=note,
        base_version=base_version,
        machine=machine,
        changed=[f for f in FIELDS if getattr(entity, f) != getattr(note, f)]
        + (["body"] if entity.body != note.body else []),
        embedding=vector,
    )
    _audit("entity.conflict", entity, base_version=base_version)
    return Upserted("conflict", entity, conflict_revision=revision)


@dataclass(frozen=True)
class Move:
    """How a move was asked for: the writer's base and machine, the note's embedding (None:
    not computed, the content looked known) and the tombstone holding the new key, if any."""

    base_version: int | None
    machine: str
    vector: list[float] | None
    moment: datetime
    displaced: Entity | None = None


def _move(entity: Entity, note: ParsedNote, move: Move) -> Upserted:
    """The entity's file moved to ``note.path``: the same entity under the note's key, its
    old key and path kept as aliases, a ``moved`` revision. New content from a stale base
    moves the entity and keeps the content as a conflict revision (nothing overwritten)."""
    same = entity.content_hash == note.content_hash
    if not same and move.vector is None:
        raise _NeedsVector
    if move.displaced is not None and move.displaced.pk != entity.pk:
        _free_key(move.displaced)
    renamed = _rename(entity, note.key, note.path)
    if same or move.base_version == entity.version:
        vector = move.vector if move.vector is not None else _last_embedding(entity)
        done = _rewrite(
            entity,
            note,
            move.base_version,
            move.machine,
            vector,
            move.moment,
            kind=Revision.Kind.MOVED,
            extra=["path", *renamed],
        )
        return done
    entity.version += 1
    entity.updated_at = move.moment
    entity.save()
    revision = _revision(
        entity,
        Revision.Kind.MOVED,
        moment=move.moment,
        base_version=entity.version - 1,
        machine=move.machine,
        changed=["path", *renamed],
        embedding=_last_embedding(entity),
    )
    _audit("entity.move", entity, renamed=bool(renamed))
    assert move.vector is not None  # noqa: S101 - checked above (content differs)
    kept = _conflict(entity, note, move.base_version, move.machine, move.vector, move.moment)
    return Upserted("conflict", entity, revision=revision, conflict_revision=kept.conflict_revision)


def _rename(entity: Entity, key: str, path: str) -> list[str]:
    """Give the entity its new key and path, its old ones kept as an alias: ``["key"]`` when
    the key changed (the caller saves)."""
    old_key = entity.key
    entity.aliases = [
        a for a in entity.aliases if a.get("key") != key and a.get("path") != path
    ] + [{"key": entity.key, "path": entity.path}]
    entity.key = key
    entity.path, entity.stem = path, stem(path)
    return ["key"] if old_key != key else []


def entity_relocate(*, entity: Entity, path: str, machine: str, moment: datetime) -> Revision:
    """Move an entity whose content now lives at ``path`` (reconcile found the same content
    or front matter id there), inside the caller's transaction: its new key (the same when
    its front matter names an ``id``), its old names kept as aliases, a ``moved`` revision.
    The store's document follows after the transaction (``entity_index``)."""
    explicit = entity.front_matter.get("id")
    key = str(explicit) if explicit else derived_key(entity.type, path)
    holder = Entity.objects.filter(project_id=entity.project_id, key=key).exclude(pk=entity.pk)
    tombstone = holder.filter(deleted_at__isnull=False).first()
    if holder.filter(deleted_at__isnull=True).exists():
        raise Conflict(f"Key {key!r} is taken by another entity.", code="stale_plan")
    if tombstone is not None:
        _free_key(tombstone)
    renamed = _rename(entity, key, path)
    entity.version += 1
    entity.updated_at = moment
    entity.save()
    revision = _revision(
        entity,
        Revision.Kind.MOVED,
        moment=moment,
        base_version=entity.version - 1,
        machine=machine,
        changed=["path", *renamed],
        embedding=_last_embedding(entity),
    )
    _audit("entity.move", entity, renamed=bool(renamed), by="reconcile")
    if machine:
        _mark_seen(entity, machine)
    return revision


def _free_key(tombstone: Entity) -> None:
    """A tombstone holds the key a moved entity takes: it keeps its history under a key of
    its own (still restorable, by that key)."""
    suffix = f"@replaced-{tombstone.pk}"
    tombstone.key = tombstone.key[: 200 - len(suffix)] + suffix
    tombstone.save(update_fields=["key"])


def _create(
    user: User, project: Any, note: ParsedNote, machine: str, vector: list[float], moment: datetime
) -> Upserted:
    entity = Entity(user=user, project=project, key=note.key, version=1)
    apply_note(entity, note)
    entity.created_at = entity.updated_at = entity.status_changed_at = moment
    entity.save(force_insert=True)  # a key taken meanwhile: _write's transaction goes back
    added, _ = _set_edges(entity, note.edges, moment)
    revision = _revision(
        entity,
        Revision.Kind.CREATED,
        moment=moment,
        note=note,
        machine=machine,
        changed=[*FIELDS, "body"],
        embedding=vector,
        added=added,
    )
    _audit("entity.create", entity)
    return Upserted("created", entity, revision=revision)


def _update(
    entity: Entity,
    note: ParsedNote,
    base_version: int | None,
    machine: str,
    vector: list[float],
    moment: datetime,
) -> Upserted:
    return _rewrite(entity, note, base_version, machine, vector, moment, kind=Revision.Kind.UPDATED)


def _revive(
    entity: Entity,
    note: ParsedNote,
    base_version: int | None,
    machine: str,
    vector: list[float],
    moment: datetime,
) -> Upserted:
    return _rewrite(
        entity, note, base_version, machine, vector, moment, kind=Revision.Kind.RESTORED
    )


OUTCOMES: dict[str, tuple[str, str]] = {
    Revision.Kind.UPDATED: ("updated", "entity.update"),
    Revision.Kind.RESTORED: ("restored", "entity.restore"),
    Revision.Kind.MOVED: ("moved", "entity.move"),
}


def _rewrite(
    entity: Entity,
    note: ParsedNote,
    base_version: int | None,
    machine: str,
    vector: list[float] | None,
    moment: datetime,
    *,
    kind: str,
    extra: Sequence[str] = (),
) -> Upserted:
    """A new version from ``note``: an update, the restore of a tombstone by a write of its
    file, or a move (``kind``)."""
    revive = kind == Revision.Kind.RESTORED
    old_status = entity.status
    changed = [*apply_note(entity, note), *extra]
    entity.version += 1
    entity.conflicted = False
    entity.updated_at = moment
    if revive:
        entity.deleted_at = None
    if revive or entity.status != old_status:
        entity.status_changed_at = moment
    entity.save()
    added, removed = _set_edges(entity, note.edges, moment)
    revision = _revision(
        entity,
        kind,
        moment=moment,
        note=note,
        base_version=base_version,
        machine=machine,
        changed=changed,
        embedding=vector,
        added=added,
        removed=removed,
    )
    outcome, action = OUTCOMES[kind]
    if revive:
        _audit(action, entity, by="write")
    elif kind == Revision.Kind.MOVED:
        _audit(action, entity, renamed="key" in extra)
    else:
        _audit(action, entity, fields=changed)
    return Upserted(outcome, entity, revision=revision)


def entity_tombstone(*, entity: Entity, moment: datetime, reason: str) -> Revision:
    """Mark one entity deleted (inside the caller's transaction): a ``deleted`` revision that
    closes its edges. The store's document goes after the transaction (``entity_index``)."""
    entity.version += 1
    entity.deleted_at = moment
    entity.updated_at = moment
    entity.save(update_fields=["version", "deleted_at", "updated_at"])
    _, removed = _set_edges(entity, (), moment)
    revision = _revision(
        entity, Revision.Kind.DELETED, moment=moment, changed=["deleted"], removed=removed
    )
    _audit("entity.delete", entity, reason=reason)
    return revision


def entity_restore(*, user: User, project_key: str, key: str) -> Entity:
    """Bring back a tombstoned entity of the user's project (within
    ``ATLAS_KNOWLEDGE_RESTORE_DAYS``), with its edges and its history."""
    project = own_project(user=user, key=project_key)
    moment = now()
    horizon = moment - timedelta(days=settings.ATLAS_KNOWLEDGE_RESTORE_DAYS)
    with transaction.atomic():
        entity = (
            Entity.objects.select_for_update()
            .select_related("project", "user__tenant")
            .filter(project=project, key=key)
            .first()
        )
        if entity is None:
            raise NotFound(f"No entity {key!r} in this project.", code="entity_not_found")
        if entity.deleted_at is None:
            return entity
        if entity.deleted_at < horizon:
            raise NotRestorable(
                f"Entity {key!r} was deleted more than "
                f"{settings.ATLAS_KNOWLEDGE_RESTORE_DAYS} days ago.",
            )
        last_live = entity.revisions.exclude(kind=Revision.Kind.CONFLICT).exclude(
            kind=Revision.Kind.DELETED
        )
        source = last_live.order_by("-number").first()
        note = parse_note(path=entity.path, content=_content(entity))
        entity.version += 1
        entity.deleted_at = None
        entity.updated_at = moment
        entity.save(update_fields=["version", "deleted_at", "updated_at"])
        added, _ = _set_edges(entity, note.edges, moment)
        _revision(
            entity,
            Revision.Kind.RESTORED,
            moment=moment,
            changed=["deleted"],
            embedding=source.embedding if source is not None else None,
            added=added,
        )
        _audit("entity.restore", entity, by="restore")
    entity_index(entity=entity, embedding=source.embedding if source is not None else None)
    return entity


class NotRestorable(Conflict):
    code = "not_restorable"


def _content(entity: Entity) -> str:
    """The note again from what was kept (front matter as YAML, then the body): only its
    edges are read from it."""
    if not entity.front_matter:
        return entity.body
    import yaml

    head = yaml.safe_dump(entity.front_matter, sort_keys=True, allow_unicode=True)
    return f"---\n{head}---\n{entity.body}"


def search_text(entity: Entity) -> str:
    """What the searchable document holds: title, body, and the names it had before it
    moved (a search for an old name finds it)."""
    names = sorted({n for a in entity.aliases for n in (a.get("key"), a.get("path")) if n})
    former = f"\n\nFormerly: {', '.join(names)}" if names else ""
    return f"{entity.title}\n\n{entity.body}".strip() + former


def entity_index(*, entity: Entity, embedding: list[float] | None = None) -> bool:
    """Bring the entity's searchable document to its current version (deleted: removed).
    False when the store could not be reached (``indexed_version`` stays behind). Inside
    ``searchable_writes_together`` the document is written with the block's others, and
    ``indexed_version`` moves only once it is stored."""
    try:
        if entity.deleted_at is not None:
            searchable_delete(user=entity.user, doc_ids=[entity.doc_id])
            _indexed(entity)
        else:
            searchable_put(
                user=entity.user,
                doc_id=entity.doc_id,
                text=search_text(entity),
                title=entity.title,
                timestamp=entity.updated_at,
                embedding=embedding,
                tags=[f"type:{entity.type}"] + ([f"status:{entity.status}"] * bool(entity.status)),
                metadata={"entity_id": entity.pk, "project": entity.project.key},
                on_written=lambda: _indexed(entity),
            )
    except AtlasError as exc:
        logger.warning("entity index deferred", extra={"entity": entity.pk, "error": exc.code})
        return False
    return True


def _indexed(entity: Entity) -> None:
    """The entity's searchable document is at its version now (inside ``indexed_together``:
    recorded with the block's others when it ends)."""
    held = _indexed_held.get()
    if held is not None:
        held.append(entity)
    else:
        _indexed_write([entity])


_indexed_held: ContextVar[list[Entity] | None] = ContextVar("atlas_indexed_held", default=None)


@contextlib.contextmanager
def indexed_together() -> Iterator[None]:
    """The ``indexed_version`` of the entities indexed inside the block, recorded in one
    statement when it ends (each still only at the version that was stored)."""
    held: list[Entity] = []
    token = _indexed_held.set(held)
    try:
        yield
    finally:
        _indexed_held.reset(token)
        if held:
            _indexed_write(held)


def _indexed_write(entities: Sequence[Entity]) -> None:
    at_version = Q()
    for entity in entities:
        at_version |= Q(pk=entity.pk, version=entity.version)
    Entity.objects.filter(at_version).update(indexed_version=F("version"))
    for entity in entities:
        entity.indexed_version = entity.version


def entities_reindex(*, user: User | None = None, limit: int = 500) -> int:
    """Index the entities whose searchable document is behind (the store was down when they
    were written); how many were brought up to date."""
    pending = Entity.objects.filter(indexed_version__lt=F("version")).select_related(
        "project", "user__tenant"
    )
    if user is not None:
        pending = pending.filter(user=user)
    done = 0
    for entity in pending.order_by("updated_at")[:limit]:
        done += entity_index(entity=entity)
    return done


def tombstones_purge() -> int:
    """Hard-delete entities tombstoned longer than ``ATLAS_KNOWLEDGE_RESTORE_DAYS`` ago (their
    revisions and edges go with them; their searchable document went at the tombstone)."""
    horizon = now() - timedelta(days=settings.ATLAS_KNOWLEDGE_RESTORE_DAYS)
    gone = Entity.objects.filter(deleted_at__lt=horizon)
    count = gone.count()
    gone.delete()
    return count
