"""When consolidation runs: on demand, after N new episodes, on the daily schedule.

Every trigger goes through ``consolidation_request``: at most one queued or running run per
user (a partial unique constraint), so two triggers at once yield one run; the task is queued
only once the run row has committed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from atlas_platform.jobs import job_enqueue, job_pending
from consolidation.llm import model_configured
from consolidation.models import ACTIVE_STATUSES, ConsolidationRun, ConsolidationState
from consolidation.services.errors import ConsolidationOff
from consolidation.services.state import check_active, episode_count_bump, lease_is_live
from tenants.models import Tenant, User
from tenants.services.audit import audit_record

logger = logging.getLogger(__name__)
EXECUTE_TASK = "consolidation.tasks.consolidation_execute"  # queued by name: tasks import us


@dataclass
class RunRequest:
    run: ConsolidationRun
    created: bool  # False: the user's queued or running run was returned instead


def job_ref(run_id: int) -> str:
    """What the run's job is called in the outbox (``atlas_platform.jobs``)."""
    return f"consolidation.run:{run_id}"


def _enqueue(run_id: int) -> None:
    """Queue the run's task after the commit (eager mode: on a background thread, so neither
    a turn nor an API call waits for the chat model). With the broker down the job waits in
    the outbox and is sent when the broker is back; the run stays queued meanwhile."""
    job_enqueue(EXECUTE_TASK, run_id, ref=job_ref(run_id))


def run_dispatch_status(run: ConsolidationRun) -> str:
    """The run's status as a caller should read it: ``pending`` while its queued job is still
    waiting for the broker (not sent yet), else the run's own status."""
    if run.status == ConsolidationRun.Status.QUEUED and job_pending(job_ref(run.pk)):
        return "pending"
    return str(run.status)


def consolidation_request(*, user: User, trigger: str) -> RunRequest:
    """Queue a consolidation run of ``user`` (or return the one already queued or running)."""
    if not model_configured():
        raise ConsolidationOff("Consolidation is off: no chat model is configured.")
    check_active(user)
    _expire_abandoned(user)
    for _ in range(3):  # the active run may finish between our insert and our read
        try:
            with transaction.atomic():
                run = ConsolidationRun.objects.create(
                    tenant_id=user.tenant_id, user=user, trigger=trigger
                )
                audit_record(
                    action="consolidation.request",
                    tenant=user.tenant,
                    subject_user=user,
                    target=run,
                    metadata={"trigger": trigger},
                )
                _enqueue(run.pk)
            return RunRequest(run=run, created=True)
        except IntegrityError:
            active = ConsolidationRun.objects.filter(user=user, status__in=ACTIVE_STATUSES).first()
            if active is not None:
                return RunRequest(run=active, created=False)
    raise RuntimeError("could not queue a consolidation run")  # pragma: no cover


def _expire_abandoned(user: User) -> None:
    """Fail a run whose worker died (lease expired) or that no worker ever picked up, so the
    user is not blocked for ever."""
    active = ConsolidationRun.objects.filter(user=user, status__in=ACTIVE_STATUSES).first()
    if active is None:
        return
    lease = timedelta(seconds=settings.ATLAS_CONSOLIDATION_LEASE_S)
    if active.status == ConsolidationRun.Status.RUNNING:
        abandoned = not lease_is_live(user=user, run_id=active.pk)
        reason = "abandoned: its worker stopped holding the lease"
    else:  # a job still in the outbox is not abandoned: it goes when the broker is back
        abandoned = active.created_at < timezone.now() - lease and not job_pending(
            job_ref(active.pk)
        )
        reason = "abandoned: no worker picked it up"
    if abandoned:
        ConsolidationRun.objects.filter(pk=active.pk, status=active.status).update(
            status=ConsolidationRun.Status.FAILED, error=reason, finished_at=timezone.now()
        )


def consolidation_episode_recorded(
    *, user: User, episode_id: str, session_id: str | None, procedure_ids: list[str]
) -> None:
    """The turn path's hook: remember playbooks shown to the session, count the episode, and
    queue a run once the user has N new ones. A couple of queries; the run itself is queued."""
    if not model_configured():
        return
    from consolidation.models import PlaybookSuggestion

    if procedure_ids:
        PlaybookSuggestion.objects.create(
            user=user,
            episode_id=episode_id,
            session_id=session_id or "",
            procedure_ids=procedure_ids,
        )
    threshold = user.tenant.consolidation_every_n_episodes
    if episode_count_bump(user) < threshold or threshold == 0 or not user.tenant.is_active:
        return
    if not ConsolidationRun.objects.filter(user=user, status__in=ACTIVE_STATUSES).exists():
        consolidation_request(user=user, trigger=ConsolidationRun.Trigger.EPISODES)


def consolidation_daily_sweep() -> int:
    """Queue a run for every user with new episodes in tenants on the daily schedule."""
    if not model_configured():
        return 0
    users = User.objects.filter(
        status=User.Status.ACTIVE,
        tenant__status=Tenant.Status.ACTIVE,
        tenant__consolidation_daily=True,
        consolidation__pending_episodes__gt=0,
    ).select_related("tenant")
    queued = 0
    for user in users:
        if consolidation_request(user=user, trigger=ConsolidationRun.Trigger.DAILY).created:
            queued += 1
    return queued


def pending_episodes(user: User) -> int:
    state = ConsolidationState.objects.filter(user=user).first()
    return state.pending_episodes if state else 0
