"""Writes: turns, semantic / procedural memories with supersession, forgetting, outcomes."""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction

from atlas_platform.exceptions import Conflict, NotFound, ValidationError
from atlas_platform.ledger import ledger_forget
from atlas_platform.tombstones import tombstone_record
from memory.engine.base import EngineError
from memory.engine.types import MemoryDoc
from memory.services.common import (
    backend,
    clean_confidence,
    clean_metadata,
    clean_project,
    clean_text,
    embedder,
    now,
    store_errors,
)
from memory.services.intents import (
    intent_abandon,
    intent_record,
    intent_settle,
    intents_reconcile,
    next_memory_id,
)
from memory.services.recall import RecallResult, memory_recall
from memory.services.scoping import user_read_scope, writer_scope
from memory.services.sessions import session_for_turn
from memory.services.turn_context import link_following, with_live_context
from memory.services.write_batch import (
    write_batch_close,
    write_batch_flush,
    write_batch_open,
    write_defer,
)
from memory.signals import episode_recorded
from tenants.models import User
from tenants.services.audit import audit_record

logger = logging.getLogger(__name__)

WRITABLE_TYPES = ("semantic", "procedural")
CONTRADICTIONS = ("natural", "harsh")
FACT_TYPES = ("preference", "identity", "constraint", "world")


def _audit(
    user: User,
    action: str,
    doc: MemoryDoc,
    *,
    undo: Callable[[], object] | None = None,
    settles: bool = True,
    **extra: Any,
) -> None:
    """The audit row of a change the store has just made, in its own short transaction (rows
    only: the store is called before, never inside it), settling the write's intent
    (``intents.intent_settle``): a retry of a write that was audited already writes no second
    row. Ids and kinds only: an audit row never holds memory text. If the row cannot be
    written, ``undo`` takes the store's change back (best effort); if that fails too, the
    pending intent is settled by the write's retry or by the reconciler. ``settles=False``: a
    change to a memory written before (a forget, an outcome), whose intent, audited long ago,
    must not swallow this row."""

    def record() -> None:
        audit_record(
            action=action,
            tenant=user.tenant,
            subject_user=user,
            metadata={"memory_id": doc.id, "memory_type": doc.memory_type, **extra},
        )

    if not settles:
        with transaction.atomic():
            record()
        return
    try:
        intent_settle(doc, record)
    except Exception:
        if undo is not None:
            try:
                undo()
                intent_abandon(doc)
            except Exception:
                logger.warning("a write without its audit row is left to its intent's reconciler")
        raise


def _store(doc: MemoryDoc) -> MemoryDoc:
    """Record the write's intent, then create the document (inside ``store_errors``). A retry
    of the same write (the same derived id) finds the first attempt's document and answers
    with it, as stored."""
    intent_record([doc])
    if doc.id not in backend().create([doc]):
        return doc
    scope = writer_scope(tenant_id=doc.tenant_id, user_id=doc.user_id or "")
    stored = backend().get(scope, doc.id)
    if stored is None:  # pragma: no cover - created a moment ago, forgotten since
        raise EngineError(f"memory {doc.id} vanished between its write and its read")
    return dataclasses.replace(stored, embedding=doc.embedding)


def embedding_text(
    memory_type: str, text: str, *, name: str | None = None, trigger: str | None = None
) -> str:
    """What the dense leg embeds: the text, and for a playbook its name and trigger too
    (people ask "how do I <trigger>", not for the one-line summary)."""
    if memory_type != "procedural":
        return text
    parts = (name, trigger, text)
    return ". ".join(p.strip().rstrip(".") for p in parts if p and p.strip()) + "."


# Vectors embedded ahead for the writes of a ``memory_writes_together`` block, by the text
# embedded (``embedding_text``'s), so each write finds its own instead of calling the model.
_ahead: contextvars.ContextVar[dict[str, list[float]] | None] = contextvars.ContextVar(
    "atlas_embedded_ahead", default=None
)


@contextlib.contextmanager
def memory_writes_together(texts: Sequence[str]) -> Iterator[None]:
    """Semantic writes of these ``texts`` done inside the block, as one: their texts embedded in
    one call before; a write that supersedes nothing is held back and written with the others
    when the block ends (``write_batch``: one store call, intents and audit rows in one
    transaction each), then the store's refresh once (``MemoryBackend.writes_together``).
    Each write is still checked and audited on its own; what they write is stored and
    searchable when the block ends, not before. So a caller reads (a recall, a get, a
    supersession) only after the block. Store failures: a 503, as every write's (raised by
    the block's end for the held writes); a database failure there raises its own error."""
    wanted: list[str] = []
    for text in texts:
        with contextlib.suppress(ValidationError):  # the write itself says what is wrong
            wanted.append(clean_text(text))
    with store_errors():
        wanted = list(dict.fromkeys(wanted))
        ahead: dict[str, list[float]] = {}
        if wanted:
            vectors = embedder().embed(wanted)
            ahead = {t: [float(x) for x in v] for t, v in zip(wanted, vectors, strict=True)}
        token = _ahead.set(ahead)
        held = write_batch_open()
        try:
            with backend().writes_together():
                try:
                    yield
                except BaseException:
                    write_batch_close(held, flush=False)  # nothing held reached the store
                    raise
                write_batch_close(held, flush=True)
        finally:
            _ahead.reset(token)


def _embedding(text: str) -> list[float]:
    ahead = _ahead.get()
    if ahead is not None and text in ahead:
        return ahead[text]
    return embedder().embed_one(text)


def _personal_doc(
    user: User, memory_type: str, text: str, *, memory_id: str | None = None, **fields: Any
) -> MemoryDoc:
    moment = fields.pop("timestamp", None) or now()
    created = now()
    return MemoryDoc(
        id=memory_id or next_memory_id(),
        tenant_id=user.memory_tenant_id,
        user_id=user.memory_id,
        memory_type=memory_type,  # type: ignore[arg-type]
        text=text,
        created_at=created,
        timestamp=moment,
        embedding=_embedding(
            embedding_text(
                memory_type, text, name=fields.get("name"), trigger=fields.get("trigger")
            )
        ),
        **fields,
    )


@dataclass
class TurnResult:
    episode: MemoryDoc
    recall: RecallResult


def episode_record(
    *,
    user: User,
    text: str,
    source: str,
    action: str,
    session_id: str | None = None,
    agent: str | None = None,
    timestamp: datetime | None = None,
) -> MemoryDoc:
    """The one write path of a conversation's words (a user's turn, an assistant's reply):
    the episode with its session (named, or inferred: ``sessions.session_for_turn``), its
    lexical context from the session's previous turn, the store write (intent first,
    create-only) and the audit row ``action`` (without text)."""
    text = clean_text(text)
    moment = timestamp or now()
    session = session_for_turn(user=user, agent=agent, session_id=session_id or None, moment=moment)
    with store_errors():
        episode = _personal_doc(
            user,
            "episodic",
            text,
            source=source,
            session_id=session.session_id,
            session_inferred=session.inferred,
            agent=agent,
            timestamp=moment,
        )
        episode, previous = with_live_context(episode, session_opened=session.opened)
        episode = _store(episode)
        link_following(previous, episode)
    _audit(
        user,
        action,
        episode,
        undo=lambda: backend().delete(episode),
        session_id=episode.session_id,
        session_inferred=episode.session_inferred,
    )
    return episode


def memory_turn_record(
    *,
    user: User,
    text: str,
    session_id: str | None = None,
    agent: str | None = None,
    timestamp: datetime | None = None,
    k: int = 5,
) -> TurnResult:
    """Store the user's verbatim message as an episode (``episode_record``), then recall on
    the same words (the episode itself excluded) so exact tokens reach the lexical leg before
    any rewrite."""
    episode = episode_record(
        user=user,
        text=text,
        source="turn",
        action="memory.turn",
        session_id=session_id,
        agent=agent,
        timestamp=timestamp,
    )
    recall = memory_recall(
        user=user,
        query=episode.text,
        k=k,
        exclude_ids=[episode.id],
        vector=episode.embedding if embedder().symmetric else None,
    )
    episode_recorded.send(
        sender=TurnResult,
        user=user,
        episode=episode,
        procedure_ids=[h.doc.id for h in recall.hits if h.doc.memory_type == "procedural"],
    )
    return TurnResult(episode=episode, recall=recall)


def _clean_steps(steps: Sequence[Any] | None) -> list[dict[str, Any]]:
    cleaned = []
    for n, step in enumerate(steps or [], start=1):
        if isinstance(step, str):
            step = {"instruction": step}
        if not isinstance(step, dict) or not str(step.get("instruction", "")).strip():
            raise ValidationError(f"Step {n} needs an instruction.", code="bad_steps")
        cleaned.append(
            {
                "order": int(step.get("order", n)),
                "instruction": str(step["instruction"]),
                "tool": step.get("tool"),
            }
        )
    return cleaned


def _superseded_targets(user: User, ids: Sequence[str], new_id: str) -> list[MemoryDoc]:
    """The user's own current semantic facts named by ``ids``; anything else is refused. A fact
    already superseded by ``new_id`` (this write's earlier attempt) still counts as current."""
    if len(set(ids)) != len(ids):
        raise ValidationError("supersedes lists an id twice.", code="bad_supersedes")
    scope = user_read_scope(user)
    found = {d.id: d for d in backend().get_many(scope, list(ids))}
    targets = []
    for memory_id in ids:
        doc = found.get(memory_id)
        if doc is None or doc.user_id != user.memory_id:
            raise NotFound(f"No memory {memory_id!r} for this user.", code="memory_not_found")
        if doc.memory_type != "semantic":
            raise ValidationError(
                f"Only semantic facts can be superseded ({memory_id} is {doc.memory_type}).",
                code="bad_supersedes",
            )
        if doc.superseded_by and doc.superseded_by != new_id:
            raise Conflict(
                f"Memory {memory_id} is already superseded by {doc.superseded_by}.",
                code="already_superseded",
            )
        targets.append(doc)
    return targets


def memory_write(
    *,
    user: User,
    text: str,
    memory_type: str,
    confidence: float = 1.0,
    fact_type: str | None = None,
    supersedes: Sequence[str] = (),
    contradiction: str | None = None,
    valid_from: datetime | None = None,
    valid_to: datetime | None = None,
    name: str | None = None,
    description: str | None = None,
    trigger: str | None = None,
    steps: Sequence[Any] | None = None,
    tags: Sequence[str] = (),
    metadata: dict[str, Any] | None = None,
    supporting_episode_ids: Sequence[str] = (),
    source: str = "agent",
    timestamp: datetime | None = None,
    project: str | None = None,
) -> MemoryDoc:
    """Write a semantic fact or a procedural playbook; a fact may supersede the user's older
    facts (marked, not deleted). A harsh contradiction lowers the new fact's confidence.

    ``timestamp`` backdates what is remembered (an import of history; the evaluation corpus):
    it is the fact's ``timestamp`` and first ``last_used_at``; ``created_at`` stays now.
    ``project``: the project it was written from (recall can be scoped to it)."""
    if memory_type not in WRITABLE_TYPES:
        raise ValidationError(
            f"memory_type must be semantic or procedural, not {memory_type!r}.",
            code="bad_memory_type",
        )
    text = clean_text(text)
    confidence = clean_confidence(confidence)
    if fact_type is not None and fact_type not in FACT_TYPES:
        raise ValidationError(
            f"fact_type must be one of {', '.join(FACT_TYPES)}.", code="bad_fact_type"
        )
    if contradiction is not None and contradiction not in CONTRADICTIONS:
        raise ValidationError("contradiction must be natural or harsh.", code="bad_contradiction")
    if (supersedes or contradiction) and memory_type != "semantic":
        raise ValidationError("Only semantic facts supersede others.", code="bad_supersedes")
    if contradiction and not supersedes:
        raise ValidationError("A contradiction needs the ids it supersedes.", code="bad_supersedes")
    if valid_from and valid_to and valid_from > valid_to:
        raise ValidationError("valid_from must not be after valid_to.", code="bad_validity")
    project = clean_project(project)
    with store_errors():
        memory_id = next_memory_id()
        if supersedes:
            write_batch_flush()  # a fact it supersedes may be held by the block
        targets = _superseded_targets(user, supersedes, memory_id) if supersedes else []
        if contradiction == "harsh":
            confidence = max(0.0, round(confidence - settings.ATLAS_SUPERSEDE_HARSH_PENALTY, 6))
        fields: dict[str, Any] = {
            "confidence": confidence,
            "source": source,
            "tags": list(tags),
            "metadata": clean_metadata(metadata),
            "project": project,
        }
        if memory_type == "semantic":
            fields.update(
                fact_type=fact_type,
                supersedes=[t.id for t in targets],
                contradiction=contradiction,
                valid_from=valid_from,
                valid_to=valid_to,
                supporting_episode_ids=list(supporting_episode_ids),
            )
        else:
            fields.update(
                name=name, description=description, trigger=trigger, steps=_clean_steps(steps)
            )
        doc = _personal_doc(
            user, memory_type, text, memory_id=memory_id, timestamp=timestamp, **fields
        )
        if memory_type == "semantic":
            doc.last_used_at = doc.timestamp if timestamp else doc.created_at
        audit_extra: dict[str, Any] = {"contradiction": contradiction, "source": source}
        if not targets and write_defer(
            user, doc, "memory.write", supersedes=doc.supersedes, **audit_extra
        ):
            return doc  # written, intent and audit row included, when the block ends
        doc = _store(doc)
        _mark_superseded(doc, targets)
    _audit(
        user,
        "memory.supersede" if targets else "memory.write",
        doc,
        undo=lambda: _unwrite(doc, targets),
        supersedes=doc.supersedes,
        **audit_extra,
    )
    return doc


def _mark_superseded(new: MemoryDoc, targets: list[MemoryDoc]) -> None:
    """Point each old fact at the new one; a concurrent supersession undoes this write."""
    marked: list[MemoryDoc] = []
    for target in targets:
        lost = False

        def mark(current: MemoryDoc) -> dict[str, Any]:
            nonlocal lost
            if current.superseded_by and current.superseded_by != new.id:
                lost = True
                return {}
            return {"superseded_by": new.id, "superseded_at": new.created_at}

        backend().update(target, mark)
        if lost:
            _unwrite(new, marked)
            intent_abandon(new)
            raise Conflict(
                f"Memory {target.id} was superseded concurrently.", code="already_superseded"
            )
        marked.append(target)


def _unwrite(new: MemoryDoc, marked: list[MemoryDoc]) -> None:
    """Take a write back: the facts it marked are current again, and it is gone."""
    for done in marked:
        backend().update(done, _unmark(new.id))
    backend().delete(new)


def memory_intents_reconcile() -> int:
    """The beat task's pass over unsettled writes (``intents.intents_reconcile``): a memory left
    in the store without its audit row by a crash nobody retried is taken back, with the
    supersessions it made. Returns how many were taken back."""

    def take_back(doc: MemoryDoc) -> None:
        scope = writer_scope(tenant_id=doc.tenant_id, user_id=doc.user_id or "")
        _unwrite(doc, backend().get_many(scope, list(doc.supersedes or [])))

    with store_errors():
        return intents_reconcile(take_back=take_back, read=lambda sc, i: backend().get(sc, i))


def _unmark(new_id: str) -> Callable[[MemoryDoc], dict[str, Any]]:
    def unmark(current: MemoryDoc) -> dict[str, Any]:
        if current.superseded_by != new_id:  # marked by someone else since: theirs to keep
            return {}
        return {"superseded_by": None, "superseded_at": None}

    return unmark


def memory_forget(*, user: User, memory_id: str) -> None:
    """Hard-delete one of the user's memories; the audit keeps a content-free tombstone."""
    with store_errors():
        write_batch_flush()  # it may be held by an open block
        doc = backend().get(user_read_scope(user), memory_id)
        if doc is None or doc.user_id != user.memory_id:
            raise NotFound(f"No memory {memory_id!r} for this user.", code="memory_not_found")
        # First in the tombstone log (outside every backup): a restore must not bring it back.
        tombstone_record(
            "memory.forget", tenant=user.tenant.memory_id, user=user.memory_id, memory_ids=[doc.id]
        )
        backend().delete(doc)
    # Stored replies of the user's requests no longer quote it (a replay answers 410).
    with transaction.atomic():
        ledger_forget(user=user, memory_id=doc.id)
    # A forget cannot be taken back: if its tombstone fails, the error says so and a retry
    # finds nothing left to forget (404), the audit keeps what it could.
    _audit(user, "memory.forget", doc, settles=False)


def procedure_outcome_record(
    *,
    user: User,
    memory_id: str,
    success: bool,
    refined_steps: Sequence[Any] | None = None,
    source: str = "agent",
) -> MemoryDoc:
    """Count a playbook's success or failure; refined steps replace the steps (version + 1)."""
    steps = _clean_steps(refined_steps) if refined_steps is not None else None
    if refined_steps is not None and not steps:
        raise ValidationError("refined_steps must not be empty.", code="bad_steps")
    with store_errors():
        doc = backend().get(user_read_scope(user), memory_id)
        if doc is None or doc.user_id != user.memory_id or doc.memory_type != "procedural":
            raise NotFound(
                f"No procedural memory {memory_id!r} for this user.", code="memory_not_found"
            )
        moment = now()

        def apply(current: MemoryDoc) -> dict[str, Any]:
            change: dict[str, Any] = (
                {"success_count": current.success_count + 1, "last_success_at": moment}
                if success
                else {"failure_count": current.failure_count + 1}
            )
            if steps is not None:
                change.update(steps=steps, version=current.version + 1)
            return change

        updated = backend().update(doc, apply)
    _audit(
        user,
        "procedure.outcome",
        doc,
        settles=False,
        success=success,
        refined=steps is not None,
        source=source,
    )
    return updated
