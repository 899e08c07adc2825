"""One consolidation run: read, ask the model, screen, write, then advance the watermark.

The watermark moves only in the transaction that closes a run whose writes all succeeded, so a
crash or a failure leaves it where it was and the next run reads the same window again (the
duplicate guard keeps any fact written before the crash from being written twice).
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.db.models.functions import Greatest
from django.utils import timezone

from atlas_platform.context import Actor, acting_as
from atlas_platform.exceptions import AtlasError, Conflict, NotFound, ValidationError
from consolidation.llm import ChatModelError, chat_json
from consolidation.models import (
    ACTIVE_STATUSES,
    ConsolidationRun,
    ConsolidationState,
    PlaybookSuggestion,
)
from consolidation.prompt import (
    Answer,
    MalformedOutput,
    build_messages,
    correction,
    parse_answer,
)
from consolidation.services.errors import UserBusy
from consolidation.services.guards import Plan, procedure_text, screen
from consolidation.services.reads import Inputs, read_inputs
from consolidation.services.state import check_active, lease_acquire, lease_release, state_for
from memory.public import (
    MemoryStoreUnavailable,
    embedding_text,
    memory_write,
    memory_writes_together,
    procedure_outcome_record,
)
from tenants.services.audit import audit_record

logger = logging.getLogger(__name__)
CONSOLIDATION_ACTOR = Actor(type="system", id="consolidation", label="consolidation")
TRANSIENT = (ChatModelError, MemoryStoreUnavailable, UserBusy)


def is_transient(exc: Exception) -> bool:
    """Worth retrying later: the model or the store was unavailable, or the user was busy."""
    if isinstance(exc, ChatModelError):
        return exc.transient
    return isinstance(exc, TRANSIENT)


def consolidation_run(*, run_id: int, final_attempt: bool = True) -> ConsolidationRun | None:
    """Execute a queued run. A transient failure on a non-final attempt puts the run back to
    queued and re-raises (the task retries with backoff); any other failure, or one on the
    final attempt, fails the run with its error. A finished run is returned untouched (None
    if the row is gone)."""
    run = ConsolidationRun.objects.select_related("user__tenant").filter(pk=run_id).first()
    if run is None or run.status not in ACTIVE_STATUSES:
        return run
    try:
        if not lease_acquire(user=run.user, run_id=run.pk):
            raise UserBusy("Another consolidation run holds this user.")
        run.status = ConsolidationRun.Status.RUNNING
        run.started_at = timezone.now()
        run.attempts += 1
        run.save(update_fields=["status", "started_at", "attempts"])
        with acting_as(CONSOLIDATION_ACTOR):
            _consolidate(run)
    except Exception as exc:
        retry = is_transient(exc) and not final_attempt
        _close_failed(run, exc, retry=retry)
        if retry or not isinstance(exc, AtlasError):
            raise
    return run


def _consolidate(run: ConsolidationRun) -> None:
    user = run.user
    check_active(user)
    state = state_for(user)
    inputs = read_inputs(user, state)
    run.episodes_in = len(inputs.window)
    run.window_episode_ids = [d.id for d in inputs.window]
    if inputs.window:
        run.window_start = inputs.window[0].created_at
        run.window_end = inputs.window[-1].created_at
    run.facts_in, run.procedures_in = len(inputs.facts), len(inputs.playbooks)
    if not inputs.window:  # nothing new since the watermark: no model call, no writes
        _close_done(run, state, inputs)
        return
    answer = _ask(run, inputs)
    run.candidates = answer.size
    plan = screen(answer, inputs, user=user)
    run.duplicates_dropped = plan.duplicates
    run.unsupported_dropped = plan.unsupported
    run.low_confidence_dropped = plan.low_confidence
    _write(run, plan)
    _close_done(run, state, inputs)


def _ask(run: ConsolidationRun, inputs: Inputs) -> Answer:
    """The model's answer; a malformed one is asked again, up to the configured attempts."""
    messages = build_messages(
        window=inputs.window,
        context=inputs.context,
        facts=inputs.facts,
        playbooks=inputs.playbooks,
        suggested=inputs.suggested,
    )
    run.model = settings.ATLAS_CHAT_MODEL.model
    attempts = max(1, settings.ATLAS_CHAT_MODEL.json_attempts)
    for attempt in range(1, attempts + 1):
        completion = chat_json(messages)
        run.model_calls += 1
        run.prompt_tokens += completion.prompt_tokens
        run.completion_tokens += completion.completion_tokens
        try:
            return parse_answer(completion.text)
        except MalformedOutput as exc:
            logger.warning("consolidation run %s: malformed answer (%s)", run.pk, exc.message)
            if attempt == attempts:
                raise MalformedOutput(
                    f"The model answered malformed JSON {attempts} times: {exc.message}"
                ) from exc
            messages = [*messages, *correction(completion.text, exc.message)]
    raise AssertionError("unreachable")  # pragma: no cover


def _write(run: ConsolidationRun, plan: Plan) -> None:
    """Through the same services as the API (each audited, source ``consolidation``). A
    candidate a rule refuses (e.g. its fact was superseded meanwhile) is counted and skipped.
    The new facts and playbooks are written as one batch (``memory_writes_together``: one
    model call for their texts, one store write, their intents and audit rows settled
    together); a fact that supersedes another is written where it comes, after the ones
    before it."""
    texts = [fact.text for fact in plan.facts] + [
        embedding_text("procedural", procedure_text(p), name=p.name, trigger=p.trigger)
        for p in plan.procedures
    ]
    with memory_writes_together(texts):
        _write_new(run, plan)
    for update in plan.updates:
        if _try(
            run,
            procedure_outcome_record,
            user=run.user,
            memory_id=update.procedure_id,
            success=update.success,
            refined_steps=update.refined_steps,
            source="consolidation",
        ):
            run.procedures_updated += 1


def _write_new(run: ConsolidationRun, plan: Plan) -> None:
    user, tag = run.user, {"consolidation_run": run.pk}
    for fact in plan.facts:
        if _try(
            run,
            memory_write,
            user=user,
            text=fact.text,
            memory_type="semantic",
            confidence=fact.confidence,
            fact_type=fact.fact_type,
            supersedes=fact.supersedes,
            contradiction=fact.contradiction,
            supporting_episode_ids=fact.supporting_episode_ids,
            metadata=tag,
            source="consolidation",
        ):
            run.facts_written += 1
            run.supersessions += bool(fact.supersedes)
    for procedure in plan.procedures:
        if _try(
            run,
            memory_write,
            user=user,
            text=procedure_text(procedure),
            memory_type="procedural",
            confidence=procedure.confidence,
            name=procedure.name,
            trigger=procedure.trigger,
            steps=procedure.steps,
            metadata={**tag, "supporting_episode_ids": procedure.supporting_episode_ids},
            source="consolidation",
        ):
            run.procedures_written += 1


def _try(run: ConsolidationRun, service: Any, **kwargs: Any) -> bool:
    try:
        service(**kwargs)
    except (ValidationError, NotFound, Conflict) as exc:
        logger.info("consolidation run %s: candidate refused (%s)", run.pk, exc.code)
        run.unsupported_dropped += 1
        return False
    return True


RESULT_FIELDS = [
    "status",
    "window_episode_ids",
    "window_start",
    "window_end",
    "episodes_in",
    "facts_in",
    "procedures_in",
    "candidates",
    "facts_written",
    "supersessions",
    "procedures_written",
    "procedures_updated",
    "duplicates_dropped",
    "unsupported_dropped",
    "low_confidence_dropped",
    "prompt_tokens",
    "completion_tokens",
    "model",
    "model_calls",
    "error",
    "finished_at",
]


def _close_done(run: ConsolidationRun, state: ConsolidationState, inputs: Inputs) -> None:
    """Advance the watermark, close the run and free the user, in one transaction."""
    window = inputs.window
    with transaction.atomic():
        if window:
            keep = settings.ATLAS_CONSOLIDATION_CONTEXT_EPISODES
            context = [d.id for d in window[-keep:]] if keep else []
            ConsolidationState.objects.filter(pk=state.pk).update(
                watermark_created_at=window[-1].created_at,
                watermark_episode_id=window[-1].id,
                context_episode_ids=context,
                pending_episodes=Greatest(F("pending_episodes") - len(window), 0),
            )
            # Suggestions stay while their episode is still shown as context (feedback may
            # come in the next window); older ones are done with.
            read = [d.id for d in [*inputs.context, *window]]
            PlaybookSuggestion.objects.filter(user=run.user, episode_id__in=read).exclude(
                episode_id__in=context
            ).delete()
        run.status = ConsolidationRun.Status.DONE
        run.finished_at = timezone.now()
        run.save(update_fields=RESULT_FIELDS)
        lease_release(user=run.user, run_id=run.pk)
        audit_record(
            action="consolidation.run",
            tenant=run.user.tenant,
            subject_user=run.user,
            target=run,
            metadata=_counts(run),
        )
    if len(window) >= settings.ATLAS_CONSOLIDATION_WINDOW:  # more waiting: consolidate on
        from consolidation.services.triggers import consolidation_request

        transaction.on_commit(
            lambda: consolidation_request(user=run.user, trigger=run.trigger), robust=True
        )


def _close_failed(run: ConsolidationRun, exc: Exception, *, retry: bool) -> None:
    message = exc.message if isinstance(exc, AtlasError) else repr(exc)
    logger.warning("consolidation run %s failed (retry=%s): %s", run.pk, retry, message)
    with transaction.atomic():
        run.error = message[:2000]
        if retry:
            run.status = ConsolidationRun.Status.QUEUED
        else:
            run.status = ConsolidationRun.Status.FAILED
            run.finished_at = timezone.now()
        run.save(update_fields=RESULT_FIELDS)
        lease_release(user=run.user, run_id=run.pk)
        if not retry:
            audit_record(
                action="consolidation.run",
                tenant=run.user.tenant,
                subject_user=run.user,
                target=run,
                metadata={**_counts(run), "error": run.error[:200]},
            )


def _counts(run: ConsolidationRun) -> dict[str, Any]:
    return {
        "status": run.status,
        "trigger": run.trigger,
        "episodes_in": run.episodes_in,
        "facts_written": run.facts_written,
        "procedures_written": run.procedures_written,
        "procedures_updated": run.procedures_updated,
        "duplicates_dropped": run.duplicates_dropped,
        "tokens": run.tokens_used,
    }
