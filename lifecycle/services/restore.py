"""``deployment_restore``: a backup put back into an empty deployment, then every erasure and
revocation made since the backup re-applied before the platform serves a request
(``manage.py atlas_restore``; run it with the web and worker processes stopped).

Refused, with nothing changed: a backup whose files do not match its manifest, one of another
deployment (unless ``allow_other_deployment``), of another backend or another schema, and a
target that is not empty (tenants, operator accounts, or memories already there).

What was erased or revoked after the backup is in the tombstone log (``atlas_platform.tombstones``,
never restored). ``deployment_reapply`` re-applies each of its entries after the backup's
position: a forget is deleted again, an erasure runs again as a forget request of its own (with
its receipt), a revoked token is revoked again. Keys: the cluster's own record of which keys
live outlives the restore; a key row it no longer honours is marked invalidated (and its user
given a new key). The report lists each re-applied entry.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import transaction
from django.utils import timezone

from atlas_platform.exceptions import Conflict
from atlas_platform.ledger import ledger_forget
from atlas_platform.tombstones import Entry, tombstones_since
from erasure.models import ForgetRequest
from erasure.services import forget_request_execute
from lifecycle.services.backup import applied_migrations
from lifecycle.services.manifest import manifest_read
from memory.public import (
    ERASABLE_TYPES,
    memory_erase_page,
    memory_store_empty,
    memory_store_kind,
    memory_store_restore,
)
from tenants.models import Deployment, PlatformToken, Tenant, User
from tenants.services.audit import audit_record
from tenants.services.restored_keys import cluster_keys_reconcile


class RestoreRefused(Conflict):
    """The backup cannot be restored here; the message says why and what to do."""

    code = "restore_refused"


def deployment_restore(*, source: Path, allow_other_deployment: bool = False) -> dict[str, Any]:
    """Restore the backup in ``source`` into this empty deployment, then re-apply the tombstone log;
    the report (``reapplied``: one line per tombstone)."""
    manifest = manifest_read(source)
    _check_target(manifest, allow_other_deployment=allow_other_deployment)
    memory_store_restore(source=source, detail=manifest["store"])
    with transaction.atomic():
        Deployment.objects.all().delete()  # the backup's row (its id) comes back with it
        call_command("loaddata", str(source / manifest["database"]["file"]), verbosity=0)
    report = deployment_reapply(manifest=manifest)
    with transaction.atomic():
        audit_record(
            action="deployment.restore",
            tenant=None,
            metadata={
                "name": manifest["name"],
                "tombstone_position": manifest["tombstone_position"],
                "reapplied": len(report["reapplied"]),
                "keys_invalidated": len(report["keys_invalidated"]),
            },
        )
    return report


def deployment_reapply(*, manifest: dict[str, Any]) -> dict[str, Any]:
    """Re-apply every tombstone after the backup's position (idempotent: a restore that
    stopped half-way is finished by running this again, ``atlas_restore --reapply``)."""
    reapplied = [
        {"seq": entry.seq, "kind": entry.kind, "at": entry.at.isoformat(), **_reapply(entry)}
        for entry in tombstones_since(int(manifest["tombstone_position"]))
    ]
    keys = cluster_keys_reconcile()
    return {
        "backup": manifest["name"],
        "backup_created_at": manifest["created_at"],
        "restored_at": timezone.now().isoformat(),
        "reapplied": reapplied,
        "keys_invalidated": keys.invalidated,
        "keys_reprovisioned": keys.reprovisioned,
    }


def _check_target(manifest: dict[str, Any], *, allow_other_deployment: bool) -> None:
    """Everything that refuses a restore, checked before anything is written (the deployment
    id first: a backend of another id refuses to start on the backup's indices)."""
    ours = settings.ATLAS_DEPLOYMENT_ID
    if ours and ours != manifest["deployment_id"] and not allow_other_deployment:
        raise RestoreRefused(
            f"The backup is of deployment {manifest['deployment_id']!r}; this is {ours!r} "
            "(ATLAS_DEPLOYMENT_ID). Pass --allow-other-deployment to restore it here anyway "
            "(Elasticsearch indices keep the backup's id: set ATLAS_DEPLOYMENT_ID to it)."
        )
    if manifest["versions"]["migrations"] != applied_migrations():
        raise RestoreRefused(
            "The backup's database schema (its applied migrations) differs from this "
            "deployment's: restore with the Atlas version that made it "
            f"({manifest['versions']['atlas']}), then upgrade."
        )
    if Tenant.objects.exists() or get_user_model().objects.exists():
        raise RestoreRefused(
            "This deployment's database is not empty (tenants or operator accounts): restore "
            "into a freshly migrated database, before creating any account."
        )
    backend = manifest["store"]["backend"]
    if backend != memory_store_kind():
        raise RestoreRefused(
            f"The backup is of a {backend} store; this deployment's is {memory_store_kind()} "
            "(ATLAS_MEMORY_BACKEND)."
        )
    if not memory_store_empty():
        raise RestoreRefused("This deployment's memory store is not empty.")


def _reapply(entry: Entry) -> dict[str, Any]:
    fields = entry.fields
    if entry.kind == "memory.forget":
        return _forget_again(fields["tenant"], fields["user"], list(fields["memory_ids"]))
    if entry.kind == "erasure":
        return _erase_again(entry)
    if entry.kind == "token.revoke":
        return _revoke_again(entry)
    return {"outcome": "unknown kind: left alone"}


def _user(user_ref: str) -> User | None:
    return User.objects.select_related("tenant").filter(uid=uuid.UUID(hex=user_ref)).first()


def _forget_again(tenant_id: str, user_id: str, ids: list[str]) -> dict[str, Any]:
    deleted: list[str] = []
    for kind in ERASABLE_TYPES:
        deleted += memory_erase_page(
            tenant_id=tenant_id, user_id=user_id, memory_type=kind, ids=ids
        )
    user = _user(user_id)
    if user is not None:
        with transaction.atomic():
            for memory_id in ids:
                ledger_forget(user=user, memory_id=memory_id)
    return {"outcome": "deleted again" if deleted else "not in the backup", "deleted": deleted}


def _erase_again(entry: Entry) -> dict[str, Any]:
    """The erasure again, as a forget request of its own (approved by the restore)."""
    fields = entry.fields
    tenant = Tenant.objects.filter(uid=uuid.UUID(hex=fields["tenant"])).first()
    if tenant is None:
        return {"outcome": "tenant not in the backup"}
    user = _user(fields["user"])
    ids = fields["memory_ids"]
    label = f"restore: tombstone {entry.seq} (forget request {fields['forget_request']})"
    with transaction.atomic():
        request = ForgetRequest.objects.create(
            tenant=tenant,
            user=user,
            user_ref=fields["user"],
            scope=ForgetRequest.Scope.USER if ids is None else ForgetRequest.Scope.IDS,
            memory_ids=ids or [],
            targets_resolved=ids is not None,
            delete_user_record=bool(fields["delete_user"]) and user is not None,
            status=ForgetRequest.Status.APPROVED,
            requested_by_type="restore",
            requested_by_id=str(entry.seq),
            requested_by_label=label[:200],
            approver_label="restore",
            decided_at=timezone.now(),
        )
        audit_record(
            action="forget_request.reapply",
            tenant=tenant,
            subject_user=user,
            target=request,
            metadata={"forget_request_id": request.pk, "tombstone_seq": entry.seq},
        )
    done = forget_request_execute(request_id=request.pk)
    receipt = (done.receipt or {}) if done is not None else {}
    return {
        "outcome": done.status if done is not None else "not run",
        "forget_request": request.pk,
        "deleted": receipt.get("total_deleted", 0),
    }


def _revoke_again(entry: Entry) -> dict[str, Any]:
    revoked = 0
    with transaction.atomic():
        live = PlatformToken.objects.select_for_update().filter(
            lookup=entry.fields["lookup"], revoked_at__isnull=True
        )
        for token in live:
            token.revoked_at = entry.at
            token.save(update_fields=["revoked_at"])
            audit_record(
                action="token.revoke",
                tenant=token.tenant,
                subject_user=token.user,
                target=token,
                metadata={"lookup": token.lookup, "tombstone_seq": entry.seq},
            )
            revoked += 1
    return {"outcome": "revoked again" if revoked else "not live in the backup", "revoked": revoked}
