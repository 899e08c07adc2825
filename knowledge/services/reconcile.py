"""Reconcile: drop entities whose files are gone, in two phases that cannot mass-delete.

1. ``reconcile_plan``: the client's manifest (project, declared roots, the files present under
   them with their hashes) against the project's live entities under those roots. Refused,
   with nothing stored: an empty manifest; a root with no files where entities exist; a
   manifest none of whose files is a known entity while entities exist (a wrong working
   directory or project); a plan deleting more than ``ATLAS_RECONCILE_MAX_COUNT`` entities,
   or more than ``ATLAS_RECONCILE_MAX_FRACTION`` of those under the roots when more than one,
   unless forced. Otherwise a plan (its id, the manifest's hash, and each missing entity
   sorted with its reason by ``knowledge.services.missing``: a deletion candidate only when
   the manifest's machine has seen its current version, a move when its content or id is at
   a new path, else kept) that supersedes the project's earlier plans.
2. ``reconcile_apply``: the latest, unexpired plan of that manifest, while none of its
   candidates or moves changed since: each candidate becomes a tombstone (restorable for
   ``ATLAS_KNOWLEDGE_RESTORE_DAYS``), each move a ``moved`` revision (old names kept as
   aliases), and the run keeps the receipt. Only that project's
   entities under those roots can ever be candidates: other projects, agents and users are
   never read, let alone touched.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction

from agents.selectors import own_project
from agents.services.common import client_id, now
from atlas_platform.exceptions import AtlasError, Conflict, ValidationError
from atlas_platform.scoping import missing
from knowledge.models import Entity, ReconcileRun
from knowledge.parsing import clean_path, clean_root, under
from knowledge.services.entities import entity_index, entity_relocate, entity_tombstone
from knowledge.services.missing import Manifest, Sorting, sort_missing
from tenants.models import User
from tenants.services.audit import audit_record

MAX_FILES = 20_000
MAX_ROOTS = 50


class ReconcileRefused(AtlasError):
    status_code = 422
    code = "reconcile_refused"


def manifest_hash(project_key: str, roots: Sequence[str], files: dict[str, str]) -> str:
    canonical = json.dumps(
        [project_key, sorted(roots), sorted(files.items())], separators=(",", ":")
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def _manifest(roots: Sequence[str], files: Sequence[dict[str, str]]) -> Manifest:
    if not files:
        raise ValidationError(
            "The manifest lists no files: refusing to plan (it would delete everything).",
            code="empty_manifest",
        )
    if not roots or len(roots) > MAX_ROOTS:
        raise ValidationError(f"Give 1 to {MAX_ROOTS} roots.", code="bad_roots")
    if len(files) > MAX_FILES:
        raise ValidationError(f"A manifest lists at most {MAX_FILES} files.", code="bad_manifest")
    clean_roots = sorted({clean_root(r) for r in roots})
    present: dict[str, str] = {}
    ids: dict[str, str] = {}
    for item in files:
        path = clean_path(item["path"])
        if not any(under(path, root) for root in clean_roots):
            raise ValidationError(
                f"File {path!r} is under none of the roots.", code="file_outside_roots"
            )
        present[path] = str(item.get("hash", "")).lower()
        if item.get("id"):
            ids[path] = str(item["id"])
    return Manifest(clean_roots, present, ids)


def reconcile_plan(
    *,
    user: User,
    project_key: str,
    roots: Sequence[str],
    files: Sequence[dict[str, str]],
    force: bool = False,
    machine_key: str | None = None,
) -> ReconcileRun:
    """Plan a reconcile of the user's project (see the module's rules)."""
    project = own_project(user=user, key=project_key)
    machine = client_id(machine_key, field="machine_key") if machine_key else ""
    manifest = _manifest(roots, files)
    live = [
        e
        for e in Entity.objects.filter(project=project, deleted_at__isnull=True).only(
            "id", "key", "path", "version", "title", "content_hash", "seen_by", "front_matter"
        )
        if any(under(e.path, root) for root in manifest.roots)
    ]
    _refuse_odd_manifests(manifest, live)
    sorting = sort_missing(live, manifest, machine)
    limit = _limit(len(sorting.candidates), len(live))
    if limit is not None and not force:
        raise ReconcileRefused(
            f"The plan would delete {len(sorting.candidates)} of {len(live)} entities under "
            f"the roots (more than {limit}): refusing without force.",
            code="too_many_deletions",
            candidates=len(sorting.candidates),
            entities_under_roots=len(live),
        )
    return _store_plan(user, project, manifest, machine, live, sorting, force)


def _refuse_odd_manifests(manifest: Manifest, live: list[Entity]) -> None:
    for root in manifest.roots:
        has_files = any(under(p, root) for p in manifest.files)
        has_entities = any(under(e.path, root) for e in live)
        if has_entities and not has_files:
            raise ReconcileRefused(
                f"Root {root or '.'!r} lists no files but holds entities: refusing to plan "
                "(a missing or unmounted folder?). Drop the root from the manifest.",
                code="root_has_no_files",
                root=root,
            )
    if live and not any(e.path in manifest.files for e in live):
        raise ReconcileRefused(
            "None of the manifest's files is a known entity of this project: refusing to plan "
            "(is the client in the right working directory, and is this the right project?).",
            code="manifest_matches_nothing",
            entities_under_roots=len(live),
        )


def _store_plan(
    user: User,
    project: Any,
    manifest: Manifest,
    machine: str,
    live: list[Entity],
    sorting: Sorting,
    force: bool,
) -> ReconcileRun:
    moment = now()
    with transaction.atomic():
        ReconcileRun.objects.filter(project=project, status=ReconcileRun.Status.PLANNED).update(
            status=ReconcileRun.Status.SUPERSEDED
        )
        run = ReconcileRun.objects.create(
            user=user,
            project=project,
            roots=manifest.roots,
            manifest_hash=manifest_hash(project.key, manifest.roots, manifest.files),
            files=len(manifest.files),
            entities_under_roots=len(live),
            machine=machine,
            candidates=sorting.candidates,
            moves=sorting.moves,
            kept=sorting.kept,
            forced=bool(force),
            created_at=moment,
            expires_at=moment + timedelta(seconds=settings.ATLAS_RECONCILE_PLAN_TTL_S),
        )
        audit_record(
            action="reconcile.plan",
            tenant=user.tenant,
            subject_user=user,
            target=run,
            metadata={
                "project": project.key,
                "candidates": len(sorting.candidates),
                "moves": len(sorting.moves),
                "kept": len(sorting.kept),
                "entities_under_roots": len(live),
                "forced": bool(force),
            },
        )
    return run


def _limit(deleting: int, total: int) -> str | None:
    """Why a plan of ``deleting`` of ``total`` is too large (None: it is not)."""
    if deleting > settings.ATLAS_RECONCILE_MAX_COUNT:
        return f"{settings.ATLAS_RECONCILE_MAX_COUNT} entities"
    fraction = settings.ATLAS_RECONCILE_MAX_FRACTION
    if deleting > 1 and total and deleting / total > fraction:
        return f"{fraction:.0%} of them"
    return None


def reconcile_apply(*, user: User, plan_id: str, manifest_hash: str) -> ReconcileRun:
    """Apply a plan: tombstone its candidates, move its moves, keep the receipt on the run."""
    try:
        run_id = uuid.UUID(str(plan_id))
    except ValueError:
        raise missing("plan", plan_id) from None
    moment = now()
    with transaction.atomic():
        run = (
            ReconcileRun.objects.for_caller(user)
            .select_for_update()
            .select_related("project")
            .filter(pk=run_id)
            .first()
        )
        if run is None:
            raise missing("plan", plan_id)
        _check_fresh(run, manifest_hash, moment)
        doomed, moving = _unchanged_rows(run)
        for entity in doomed:
            entity_tombstone(entity=entity, moment=moment, reason="reconcile")
        moved = []
        for entity in moving:
            old = entity.key
            entity_relocate(
                entity=entity, path=run_move_to(run, entity), machine=run.machine, moment=moment
            )
            moved.append({"before": old, "key": entity.key})
        run.status = ReconcileRun.Status.APPLIED
        run.applied_at = moment
        run.deleted = [e.key for e in doomed]
        run.moved = moved
        run.save(update_fields=["status", "applied_at", "deleted", "moved"])
        audit_record(
            action="reconcile.apply",
            tenant=user.tenant,
            subject_user=user,
            target=run,
            metadata={"project": run.project.key, "deleted": len(doomed), "moved": len(moved)},
        )
    for entity in [*doomed, *moving]:
        entity_index(entity=entity)
    return run


def run_move_to(run: ReconcileRun, entity: Entity) -> str:
    return str(next(m["to"] for m in run.moves if m["id"] == entity.pk))


def _unchanged_rows(run: ReconcileRun) -> tuple[list[Entity], list[Entity]]:
    """The plan's candidates and moves, locked, as they were planned (else 409)."""
    wanted = {c["id"]: c for c in [*run.candidates, *run.moves]}
    rows = list(
        Entity.objects.select_for_update()
        .select_related("project", "user__tenant")
        .filter(pk__in=list(wanted), project=run.project)
        .order_by("key")
    )
    changed = [
        e.key for e in rows if e.deleted_at is not None or e.version != wanted[e.pk]["version"]
    ]
    if changed or len(rows) != len(wanted):
        raise Conflict(
            "Entities changed since the plan was made: make a new plan.",
            code="stale_plan",
            changed=changed[:50],
        )
    moving = {m["id"] for m in run.moves}
    return [e for e in rows if e.pk not in moving], [e for e in rows if e.pk in moving]


def _check_fresh(run: ReconcileRun, manifest_hash: str, moment: Any) -> None:
    if run.status != ReconcileRun.Status.PLANNED:
        why = (
            "was already applied"
            if run.status == ReconcileRun.Status.APPLIED
            else ("was replaced by a newer plan")
        )
        raise Conflict(f"This plan {why}: make a new plan.", code="stale_plan")
    if run.expires_at <= moment:
        raise Conflict("This plan expired: make a new plan.", code="stale_plan")
    if manifest_hash != run.manifest_hash:
        raise Conflict(
            "This plan was made for another manifest: make a new plan.", code="stale_plan"
        )


def reconcile_run_get(*, user: User, run_id: str) -> ReconcileRun:
    try:
        pk = uuid.UUID(str(run_id))
    except ValueError:
        raise missing("plan", run_id) from None
    run = ReconcileRun.objects.for_caller(user).filter(pk=pk).select_related("project").first()
    if run is None:
        raise missing("plan", run_id)
    return run
