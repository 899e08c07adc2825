"""A block of upserts at once (a sync's run of ``entity.upsert`` operations): the outcomes
``entity_upsert`` gives one by one, in a number of statements that does not grow with the
block's notes. One read of the block's entities before (which notes need an embedding), one
embedding call, then one transaction: the entities locked in one statement, their open edges
and last revision numbers read in one each, and the new entities, edges, revisions and audit
events written in one statement each, the changed entities in one; then their searchable
documents in the block's one store write, and ``indexed_version`` in one statement.

What this path does not decide (a tombstone written again, a move, two notes of the block
naming the same key or path, content that changed since the first read) is left to
``entity_upsert``, run alone for that note after the block's others.
"""

from __future__ import annotations

import contextlib
import logging
from collections import Counter
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import DatabaseError, IntegrityError, transaction
from django.db.models import Max, Q

from agents.selectors import own_project
from agents.services.common import now
from atlas_platform.exceptions import AtlasError
from knowledge.models import Edge, Entity, Revision
from knowledge.parsing import ParsedNote
from knowledge.services.entities import (
    FIELDS,
    Upserted,
    apply_note,
    audit_row,
    edge_changes,
    edge_rows,
    entity_index,
    indexed_together,
    mark_seen,
    revision_row,
    upsert_input,
)
from memory.public import searchable_embed, searchable_writes_together
from tenants.models import User
from tenants.services.audit import AuditEntry, audit_record_many

logger = logging.getLogger(__name__)

Result = Upserted | AtlasError | None  # None: the note is upserted alone (``entity_upsert``)
SAVED = [*FIELDS, "body", "content_hash", "stem", "version", "conflicted", "updated_at"]
SAVED += ["status_changed_at", "seen_by"]

_prepared: ContextVar[list[tuple[dict[str, Any], Result]] | None] = ContextVar(
    "atlas_upserts_prepared", default=None
)


@contextlib.contextmanager
def entity_upserts_together(texts: Sequence[str]) -> Iterator[None]:
    """The block a run of upserts is applied in: the documents written in one store call,
    ``indexed_version`` in one statement; ``entity_upserts_prepare`` parses the run's notes
    once, embeds the ones that need a vector in one call and applies them at once, each
    operation's run then answers its note's result (``prepared_upsert``). ``texts``: the
    operations' texts for the block (unused: the notes are parsed inside it)."""
    token = _prepared.set([])
    try:
        with indexed_together(), searchable_writes_together(()):
            yield
    finally:
        _prepared.reset(token)


def entity_upserts_prepare(*, user: User, requests: Sequence[dict[str, Any]]) -> None:
    """Apply the block's upserts (``entity_upsert``'s arguments) at once, keeping each one's
    result for ``prepared_upsert``. A failure (the database, the model) leaves every note to its
    own run."""
    held = _prepared.get()
    if held is None or not requests:
        return
    try:
        results = entities_upsert(user=user, requests=requests)
    except (AtlasError, DatabaseError) as exc:  # each one's own run meets it and answers it
        logger.warning("a block of %d upserts is applied one by one", len(requests), exc_info=exc)
        return
    held.extend(zip(requests, results, strict=True))


def prepared_upsert(args: dict[str, Any]) -> Upserted | None:
    """The result ``entity_upserts_prepare`` kept for these arguments (the same object), or
    None (apply it alone); raises the note's refusal."""
    held = _prepared.get() or []
    for n, (asked, done) in enumerate(held):
        if asked is args:
            del held[n]
            if isinstance(done, AtlasError):
                raise done
            return done
    return None


@dataclass
class _Ask:
    """One note of the block, checked, and what became of it."""

    project: Any
    note: ParsedNote
    base_version: int | None
    machine: str
    vector: list[float] | None = None
    done: Upserted | None = None
    entity: Entity | None = None
    changed: list[str] = field(default_factory=list)

    @property
    def where(self) -> tuple[int, str]:
        return (self.project.pk, self.note.key)


def entities_upsert(*, user: User, requests: Sequence[dict[str, Any]]) -> list[Result]:
    """Upsert the notes (each ``entity_upsert``'s keyword arguments) as one block: each
    note's ``Upserted``, its refusal, or None where it must be upserted alone."""
    projects: dict[str, Any] = {}
    asks = [_ask(user, request, projects) for request in requests]
    plain = _plain(asks)
    _embed(plain)
    for _ in range(3):
        try:
            with transaction.atomic():
                moment = now()
                _apply(user, plain, moment)
            break
        except IntegrityError:  # a key created meanwhile by another writer: decide again
            for ask in plain:
                ask.done, ask.entity, ask.changed = None, None, []
    else:
        return [a if isinstance(a, AtlasError) else None for a in asks]
    for ask in plain:
        if ask.done is not None and ask.done.outcome in ("created", "updated"):
            entity_index(entity=ask.done.entity, embedding=ask.vector)
    return [a if isinstance(a, AtlasError) or a is None else a.done for a in asks]


def _ask(user: User, request: dict[str, Any], projects: dict[str, Any]) -> _Ask | AtlasError | None:
    try:
        key = request["project_key"]
        if key not in projects:
            projects[key] = own_project(user=user, key=key)
        note, machine, source = upsert_input(
            path=request["path"],
            content=request["content"],
            content_hash=request.get("content_hash"),
            machine_key=request.get("machine_key"),
            moved_from=request.get("moved_from"),
        )
    except AtlasError as exc:
        return exc
    if source is not None:  # a move: alone
        return None
    return _Ask(projects[key], note, request.get("base_version"), machine)


def _plain(asks: list[_Ask | AtlasError | None]) -> list[_Ask]:
    """The notes this path decides: two naming the same key or path are upserted alone (in
    their order), as is every note the block leaves alone."""
    mine = [a for a in asks if isinstance(a, _Ask)]
    keys = Counter(a.where for a in mine)
    paths = Counter((a.project.pk, a.note.path) for a in mine)
    shared = {
        n
        for n, a in enumerate(asks)
        if isinstance(a, _Ask) and (keys[a.where] > 1 or paths[(a.project.pk, a.note.path)] > 1)
    }
    for n in shared:
        asks[n] = None
    return [a for a in asks if isinstance(a, _Ask)]


def _by_key(asks: Sequence[_Ask]) -> Q:
    keys: dict[int, list[str]] = {}
    for ask in asks:
        keys.setdefault(ask.project.pk, []).append(ask.note.key)
    where = Q(pk__in=[])
    for project, named in keys.items():
        where |= Q(project_id=project, key__in=named)
    return where


def _embed(asks: Sequence[_Ask]) -> None:
    """One read of what the block's keys hold, one embedding call for the notes that need a
    vector: all but the ones whose content is already their entity's (nothing to write) and
    the ones upserted alone anyway (a tombstone, another path)."""
    if not asks:
        return
    known = {
        (project, key): (content_hash, path, deleted_at)
        for project, key, content_hash, path, deleted_at in Entity.objects.filter(
            _by_key(asks)
        ).values_list("project_id", "key", "content_hash", "path", "deleted_at")
    }
    wanted = [ask for ask in asks if _needs_vector(ask, known.get(ask.where))]
    vectors = searchable_embed(texts=[ask.note.search_text for ask in wanted])
    for ask, vector in zip(wanted, vectors, strict=True):
        ask.vector = [round(v, 5) for v in vector]


def _needs_vector(ask: _Ask, held: tuple[str, str, datetime | None] | None) -> bool:
    """New, or new content at its entity's path (a tombstone, a move: upserted alone)."""
    if held is None:
        return True
    content_hash, path, deleted_at = held
    return deleted_at is None and path == ask.note.path and content_hash != ask.note.content_hash


def _apply(user: User, asks: list[_Ask], moment: datetime) -> None:
    """Inside the block's transaction: decide each note against its locked entity, then
    write what they decided, a statement per kind of row."""
    locked = {
        (e.project_id, e.key): e
        for e in Entity.objects.select_for_update()
        .select_related("project", "user__tenant")
        .filter(_by_key(asks))
        .order_by("pk")
    }
    for ask in asks:
        _decide(user, ask, locked.get(ask.where), moment)
    decided = [a for a in asks if a.done is not None]
    created = [a.done.entity for a in decided if a.done and a.done.outcome == "created"]
    Entity.objects.bulk_create(created)
    rows = _Rows()
    _rows(decided, rows, moment)
    Edge.objects.filter(pk__in=rows.closed).update(removed_at=moment)
    Edge.objects.bulk_create(rows.edges)
    Revision.objects.bulk_create(rows.revisions)
    Entity.objects.bulk_update(rows.saved, SAVED)
    if rows.events:
        audit_record_many(rows.events)


def _decide(user: User, ask: _Ask, entity: Entity | None, moment: datetime) -> None:
    """``entity_upsert``'s decision for this note; ``ask.done`` stays None when the note is
    upserted alone."""
    note = ask.note
    if entity is None:
        if ask.vector is not None:
            ask.done = Upserted("created", _created(user, ask, moment))
        return
    if entity.deleted_at is not None or entity.path != note.path:
        return  # a tombstone written again, a move: alone
    ask.entity = entity
    if entity.content_hash == note.content_hash:
        ask.done = Upserted("unchanged", entity)
        return
    if ask.vector is None:
        return  # it changed since the first read: alone
    if ask.base_version != entity.version:
        ask.changed = [f for f in FIELDS if getattr(entity, f) != getattr(note, f)]
        ask.changed += ["body"] if entity.body != note.body else []
        entity.conflicted = True
        ask.done = Upserted("conflict", entity)
        return
    old_status = entity.status
    ask.changed = apply_note(entity, note)
    entity.version += 1
    entity.conflicted = False
    entity.updated_at = moment
    if entity.status != old_status:
        entity.status_changed_at = moment
    ask.done = Upserted("updated", entity)


def _created(user: User, ask: _Ask, moment: datetime) -> Entity:
    entity = Entity(user=user, project=ask.project, key=ask.note.key, version=1)
    apply_note(entity, ask.note)
    entity.created_at = entity.updated_at = entity.status_changed_at = moment
    if ask.machine:
        mark_seen(entity, ask.machine)
    return entity


@dataclass
class _Rows:
    """What the block writes, a statement each."""

    closed: list[int] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    revisions: list[Revision] = field(default_factory=list)
    saved: list[Entity] = field(default_factory=list)
    events: list[AuditEntry] = field(default_factory=list)


def _rows(asks: list[_Ask], rows: _Rows, moment: datetime) -> None:
    """The edges, revisions, entity updates and audit events of the decided notes (the
    existing entities' open edges and last revision numbers read in one statement each)."""
    old = [
        a.entity.pk
        for a in asks
        if a.entity is not None and a.done is not None and a.done.outcome != "unchanged"
    ]
    edges: dict[int, dict[tuple[str, str], Edge]] = {}
    last: dict[int, int] = {}
    if old:
        for edge in Edge.objects.filter(source_id__in=old, removed_at__isnull=True):
            edges.setdefault(edge.source_id, {})[(edge.label, edge.target)] = edge
        last = dict(
            Revision.objects.filter(entity_id__in=old)
            .values("entity_id")
            .annotate(last=Max("number"))
            .values_list("entity_id", "last")
        )
    for ask in asks:
        assert ask.done is not None  # noqa: S101 - only the decided ones
        _row(ask, ask.done, rows, edges.get(ask.done.entity.pk, {}), last, moment)


def _row(
    ask: _Ask,
    done: Upserted,
    rows: _Rows,
    current: dict[tuple[str, str], Edge],
    last: dict[int, int],
    moment: datetime,
) -> None:
    entity, outcome = done.entity, done.outcome
    if outcome == "unchanged":
        resolved = entity.conflicted and ask.base_version == entity.version
        if resolved:  # the writer saw the current version: resolved
            entity.conflicted = False
            rows.events.append(audit_row("entity.resolve", entity))
        if (ask.machine and mark_seen(entity, ask.machine)) or resolved:
            rows.saved.append(entity)
        return
    number = last.get(entity.pk, 0) + 1
    if outcome == "conflict":
        revision = revision_row(
            entity,
            Revision.Kind.CONFLICT,
            number=number,
            moment=moment,
            note=ask.note,
            base_version=ask.base_version,
            machine=ask.machine,
            changed=ask.changed,
            embedding=ask.vector,
        )
        rows.revisions.append(revision)
        rows.saved.append(entity)
        rows.events.append(audit_row("entity.conflict", entity, base_version=ask.base_version))
        ask.done = Upserted("conflict", entity, conflict_revision=revision)
        return
    added, removed = edge_changes(current, ask.note.edges)
    rows.closed += [current[e].pk for e in removed]
    rows.edges += edge_rows(entity, added, moment)
    created = outcome == "created"
    revision = revision_row(
        entity,
        Revision.Kind.CREATED if created else Revision.Kind.UPDATED,
        number=number,
        moment=moment,
        note=ask.note,
        base_version=None if created else ask.base_version,
        machine=ask.machine,
        changed=[*FIELDS, "body"] if created else ask.changed,
        embedding=ask.vector,
        added=added,
        removed=removed,
    )
    rows.revisions.append(revision)
    if created:
        rows.events.append(audit_row("entity.create", entity))
    else:
        if ask.machine:
            mark_seen(entity, ask.machine)
        rows.saved.append(entity)
        rows.events.append(audit_row("entity.update", entity, fields=ask.changed))
    ask.done = Upserted(outcome, entity, revision=revision)
