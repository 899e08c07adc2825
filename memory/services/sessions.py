"""Conversation sessions for turns sent without one: the one rule, live and in batches.

Most integrations send a turn's text only. Without a session a turn has no lexical context
(``turn_context``) and recall's session spread has nothing to spread over, so Atlas infers one:
a turn without a ``session_id`` joins the session of the previous turn of the same user and
agent when it came at most ``ATLAS_SESSION_GAP_S`` before it (the turn's own ``timestamp``
counts when the caller sends one), and opens a new session otherwise. The document says so
(``MemoryDoc.session_inferred``); a session the caller names is taken as it is, never merged
with an inferred one (inferred ids are new ones, ``auto-<hex>``).

Live turns keep the previous turn in a ``SessionCursor`` row per (user, agent); a batch
(``memory_import``, the backfill of stored turns) follows the same rule over its turns in time
order (``sessions_assign``). The gap's measurement: lab/docs/recall-notebook.md ("Sessions
for text-only turns").
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import NamedTuple

from django.conf import settings
from django.db import IntegrityError, transaction

from memory.engine.types import MemoryDoc, ReadScope
from memory.models import SessionCursor
from memory.services.common import backend, store_errors
from memory.services.scoping import writer_scope
from memory.services.turn_context import next_turns, previous_turns, with_lexical_context
from tenants.models import User
from tenants.services.audit import audit_record

INFERRED_PREFIX = "auto-"
SCAN_PAGE = 500


def session_gap() -> timedelta:
    """The longest quiet within one inferred session (``ATLAS_SESSION_GAP_S``)."""
    return timedelta(seconds=float(settings.ATLAS_SESSION_GAP_S))


def new_session_id() -> str:
    return f"{INFERRED_PREFIX}{uuid.uuid4().hex[:20]}"


def _joins(last_turn_at: datetime, moment: datetime, gap: timedelta) -> bool:
    """A turn at ``moment`` continues a session whose previous turn was at ``last_turn_at``
    (either order: a backdated turn close to it continues it too)."""
    return abs(moment - last_turn_at) <= gap


class TurnSession(NamedTuple):
    session_id: str
    inferred: bool
    opened: bool  # a new inferred session: no turn of it is stored yet


def session_for_turn(
    *, user: User, agent: str | None, session_id: str | None, moment: datetime
) -> TurnSession:
    """The session of a live turn of ``user`` from ``agent`` at ``moment``; moves the user's
    cursor to this turn (rows only: call it outside the store's work). A named ``session_id``
    is kept as it is."""
    gap = session_gap()
    with transaction.atomic():
        cursor = _cursor(user, agent or "")
        opened = False
        if session_id:
            chosen, inferred = session_id, False
        elif cursor is not None and _joins(cursor.last_turn_at, moment, gap):
            chosen, inferred = cursor.session_id, True
        else:
            chosen, inferred, opened = new_session_id(), True, True
        if cursor is None:
            _cursor_create(user, agent or "", chosen, inferred, moment)
        else:
            cursor.session_id, cursor.inferred, cursor.last_turn_at = chosen, inferred, moment
            cursor.save(update_fields=["session_id", "inferred", "last_turn_at"])
    return TurnSession(chosen, inferred, opened)


def _cursor(user: User, agent: str) -> SessionCursor | None:
    return SessionCursor.objects.select_for_update().filter(user=user, agent=agent).first()


def _cursor_create(user: User, agent: str, session_id: str, inferred: bool, at: datetime) -> None:
    """The user's first cursor for ``agent``; a concurrent first turn that made it already
    wins (this turn keeps the session chosen for it)."""
    try:
        with transaction.atomic():
            SessionCursor.objects.create(
                user=user, agent=agent, session_id=session_id, inferred=inferred, last_turn_at=at
            )
    except IntegrityError:
        pass


def sessions_assign(docs: Sequence[MemoryDoc], gap: timedelta | None = None) -> list[MemoryDoc]:
    """Give each episode of ``docs`` without a session one by the live rule, in time order per
    agent (episodes with a session count as the previous turn too). Sets ``session_id`` and
    ``session_inferred`` on those documents and returns them."""
    gap = session_gap() if gap is None else gap
    last: dict[str, tuple[str, datetime]] = {}
    assigned: list[MemoryDoc] = []
    episodes = [d for d in docs if d.memory_type == "episodic"]
    for doc in sorted(episodes, key=lambda d: d.timestamp):  # stable: batch order on ties
        previous = last.get(doc.agent or "")
        if not doc.session_id:
            joins = previous is not None and _joins(previous[1], doc.timestamp, gap)
            doc.session_id = previous[0] if joins and previous else new_session_id()
            doc.session_inferred = True
            assigned.append(doc)
        last[doc.agent or ""] = (doc.session_id, doc.timestamp)
    return assigned


def memory_sessions_backfill(*, user: User) -> int:
    """Give ``user``'s stored turns that have no session one by the live rule
    (``sessions_assign`` over all their turns in time order), with the lexical context of
    their new session neighbours; returns how many turns got one. Idempotent: a turn with a
    session is never changed, so a second run assigns nothing. One audit row (a count)."""
    scope = writer_scope(tenant_id=user.memory_tenant_id, user_id=user.memory_id)
    with store_errors():
        episodes = _episodes(scope, user.memory_id)
        assigned = {id(d) for d in sessions_assign(episodes)}
        if not assigned:
            return 0
        neighbours = zip(episodes, previous_turns(episodes), next_turns(episodes), strict=True)
        for doc, before, after in neighbours:
            if id(doc) in assigned:
                with_lexical_context(doc, before, after)
                backend().update(doc, _assign(doc))
    with transaction.atomic():
        audit_record(
            action="memory.sessions_backfill",
            tenant=user.tenant,
            subject_user=user,
            metadata={"turns": len(assigned)},
        )
    return len(assigned)


def _episodes(scope: ReadScope, user_id: str) -> list[MemoryDoc]:
    out: list[MemoryDoc] = []
    after: tuple[str, str] | None = None
    while True:
        page = backend().scan(
            scope, memory_types=("episodic",), search_after=after, limit=SCAN_PAGE
        )
        out.extend(d for d in page if d.user_id == user_id)
        if len(page) < SCAN_PAGE:
            return out
        after = (page[-1].created_at.isoformat(), page[-1].id)


def _assign(doc: MemoryDoc) -> Callable[[MemoryDoc], dict[str, object]]:
    change: dict[str, object] = {
        "session_id": doc.session_id,
        "session_inferred": True,
        "context": doc.context,
        "context_ids": list(doc.context_ids),
    }

    def assign(current: MemoryDoc) -> dict[str, object]:
        return {} if current.session_id else change  # given one since it was read: kept

    return assign
