"""Turns sent without a session_id join their user's current session, or open an inferred one
after ``ATLAS_SESSION_GAP_S`` of quiet (``memory.services.sessions``); a named session is never
merged with an inferred one; the backfill of stored turns follows the same rule, once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from io import StringIO

from django.core.management import call_command

from memory.engine.types import MemoryDoc
from memory.models import SessionCursor
from memory.services.common import backend, embedder
from memory.services.imports import ImportedMemory, memory_import
from memory.services.recall import memory_recall
from memory.services.replies import memory_reply_record
from memory.services.scoping import user_read_scope
from memory.services.sessions import INFERRED_PREFIX, sessions_assign
from memory.services.writes import memory_turn_record
from memory.shapes import memory_json
from tenants.models import AuditEvent

MAY = datetime(2026, 5, 9, 18, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return MAY + timedelta(minutes=minutes)


def said(user, text: str, minutes: float, **kwargs):
    return memory_turn_record(user=user, text=text, timestamp=at(minutes), k=1, **kwargs).episode


def stored(user, doc: MemoryDoc) -> MemoryDoc:
    found = backend().get(user_read_scope(user), doc.id)
    assert found is not None
    return found


def test_text_only_turns_share_a_session_until_a_quiet_gap(people, settings) -> None:
    settings.ATLAS_SESSION_GAP_S = 1800
    first = said(people.alice, "Did you go and meet the greyhound?", 0)
    second = said(people.alice, "We did! She's coming home Saturday", 3)
    later = said(people.alice, "Morning, how was the run?", 3 + 31)

    assert first.session_id and first.session_id.startswith(INFERRED_PREFIX)
    assert first.session_inferred and second.session_inferred and later.session_inferred
    assert second.session_id == first.session_id
    assert later.session_id not in (None, first.session_id)
    # The turn found its previous turn: its lexical context holds the question's words.
    assert "greyhound" in (stored(people.alice, second).context or "")
    assert memory_json(second)["session_inferred"] is True
    assert memory_json(second, compact=True)["session_inferred"] is True


def test_the_first_turn_of_an_opened_session_reads_no_previous_turn(
    people, settings, monkeypatch
) -> None:
    settings.ATLAS_SESSION_GAP_S = 1800
    reads: list[str] = []
    store = type(backend())
    real = store.previous_turn

    def counted(self, **kwargs):
        reads.append(kwargs["session_id"])
        return real(self, **kwargs)

    monkeypatch.setattr(store, "previous_turn", counted)
    first = said(people.alice, "Did you go and meet the greyhound?", 0)
    second = said(people.alice, "We did! She's coming home Saturday", 3)
    named = said(people.alice, "Back to the quarterly plan", 5, session_id="planning")

    assert reads == [first.session_id, "planning"]  # the opened session's first turn: none
    assert second.session_id == first.session_id and named.session_id == "planning"
    assert "greyhound" in (stored(people.alice, second).context or "")


def test_the_turns_own_timestamp_decides_not_the_clock(people, settings) -> None:
    """A history sent now with its own dates is split where the dates say, however fast it
    arrives."""
    settings.ATLAS_SESSION_GAP_S = 3600
    monday = said(people.alice, "Booked the vet for Friday", 0)
    tuesday = said(people.alice, "The vet says she is fine", 24 * 60)
    assert monday.session_id != tuesday.session_id


def test_users_and_agents_each_have_their_own_current_session(people, settings) -> None:
    settings.ATLAS_SESSION_GAP_S = 3600
    alice = said(people.alice, "hello from alice", 0)
    bob = said(people.bob, "hello from bob", 1)
    other_agent = said(people.alice, "hello from the other app", 2, agent="mobile")
    again = said(people.alice, "still alice", 3)

    assert len({alice.session_id, bob.session_id, other_agent.session_id}) == 3
    assert again.session_id == alice.session_id


def test_an_explicit_session_is_never_merged_with_an_inferred_one(people, settings) -> None:
    settings.ATLAS_SESSION_GAP_S = 3600
    inferred = [said(people.alice, f"text only {n}", n) for n in range(2)]
    named = said(people.alice, "named session", 2, session_id="chat-42")
    named_again = said(people.alice, "named again", 3, session_id="chat-42")

    assert (named.session_id, named.session_inferred) == ("chat-42", False)
    assert named_again.session_id == "chat-42"
    for doc in inferred:  # the inferred turns stay where they were
        kept = stored(people.alice, doc)
        assert kept.session_id == inferred[0].session_id != "chat-42"
        assert kept.session_inferred
    # The named turn's context is its own session's, never the inferred session's words.
    assert "text only" not in (stored(people.alice, named).context or "")
    assert "named session" in (stored(people.alice, named_again).context or "")


def test_a_caller_mixing_both_has_text_only_turns_follow_its_last_session(people, settings) -> None:
    """An integrator that names the session on its turns but not on the replies: the replies
    (and any text-only turn) join the session it named last while the conversation goes on,
    marked inferred; after the gap a text-only turn opens a new inferred session."""
    settings.ATLAS_SESSION_GAP_S = 600
    turn = said(people.alice, "Which race did you sign up for?", 0, session_id="chat-7")
    reply = memory_reply_record(user=people.alice, text="The Bristol half", timestamp=at(1))
    later = said(people.alice, "new day, new topic", 60)

    assert (reply.session_id, reply.session_inferred, reply.source) == ("chat-7", True, "assistant")
    assert "race" in (stored(people.alice, reply).context or "")
    assert later.session_inferred and later.session_id not in ("chat-7", None)
    cursor = SessionCursor.objects.get(user=people.alice, agent="")
    assert (cursor.session_id, cursor.inferred) == (later.session_id, True)
    assert turn.session_inferred is False


def test_turns_with_and_without_timestamps_mix(people, settings) -> None:
    """Only some turns dated: the dated one keeps its date (time words read it), the others
    are dated now, and each still gets a session."""
    settings.ATLAS_SESSION_GAP_S = 3600
    old = said(people.alice, "We adopted the greyhound, her name is Juniper", 0)
    now_turn = memory_turn_record(user=people.alice, text="Juniper slept all day", k=1).episode

    assert old.timestamp == at(0)
    assert abs((now_turn.timestamp - datetime.now(UTC)).total_seconds()) < 60
    assert old.session_id and now_turn.session_id and old.session_id != now_turn.session_id
    hits = memory_recall(user=people.alice, query="what did we adopt in May 2026?", k=2).hits
    assert hits[0].doc.id == old.id


def test_the_turn_audit_row_says_the_session_was_inferred(people, settings) -> None:
    said(people.alice, "no session given", 0)
    event = AuditEvent.objects.filter(action="memory.turn").latest("id")
    assert event.metadata["session_inferred"] is True
    assert event.metadata["session_id"].startswith(INFERRED_PREFIX)


def test_an_import_infers_sessions_for_turns_without_one(people, settings) -> None:
    settings.ATLAS_SESSION_GAP_S = 1800

    def turn(text: str, minutes: float, session: str | None = None) -> ImportedMemory:
        return ImportedMemory(
            memory_type="episodic", text=text, timestamp=at(minutes), session_id=session
        )

    docs = memory_import(
        user=people.alice,
        memories=[
            turn("a", 0),
            turn("b", 5),
            turn("named", 6, session="s9"),
            turn("c", 7),
            turn("d", 120),
        ],
    )
    a, b, named, c, d = docs
    assert a.session_id == b.session_id and a.session_inferred and b.session_inferred
    assert (named.session_id, named.session_inferred) == ("s9", False)
    assert (c.session_id, c.session_inferred) == ("s9", True)  # the previous turn's session
    assert d.session_id not in (a.session_id, "s9") and d.session_inferred


def _sessionless(user, text: str, minutes: float) -> MemoryDoc:
    """A turn stored before sessions were inferred: no session, no context."""
    doc = MemoryDoc(
        id=f"old{minutes:g}".replace(".", "_"),
        tenant_id=user.memory_tenant_id,
        user_id=user.memory_id,
        memory_type="episodic",
        text=text,
        created_at=at(minutes),
        timestamp=at(minutes),
        source="turn",
        embedding=list(embedder().embed_one(text)),
    )
    backend().write([doc])
    return doc


def test_the_backfill_assigns_sessions_once_by_the_same_rule(people, settings) -> None:
    settings.ATLAS_SESSION_GAP_S = 1800
    olds = [
        _sessionless(people.alice, "Did you book the karaoke room?", 0),
        _sessionless(people.alice, "Yes, for Maya's birthday", 2),
        _sessionless(people.alice, "Unrelated, weeks later", 60 * 24 * 20),
    ]
    bobs = _sessionless(people.bob, "bob's own turn", 1)
    named = said(people.alice, "a named one", 3, session_id="s1")

    out = StringIO()
    call_command("memory_sessions_backfill", "--tenant", "acme", stdout=out)
    first = [stored(people.alice, d) for d in olds]
    again = StringIO()
    call_command("memory_sessions_backfill", stdout=again)

    assert "turns given a session: 4" in out.getvalue()  # alice's three and bob's one
    assert "turns given a session: 0" in again.getvalue()
    assert [stored(people.alice, d).session_id for d in olds] == [d.session_id for d in first]
    assert all(d.session_inferred for d in first)
    # The karaoke turns share an inferred session; the named turn after them keeps its own,
    # and the turn weeks later opens another.
    assert first[0].session_id == first[1].session_id
    assert first[0].session_id and first[0].session_id.startswith(INFERRED_PREFIX)
    assert first[2].session_id not in (first[1].session_id, "s1")
    assert "karaoke" in (first[1].context or "")
    assert stored(people.bob, bobs).session_id not in (None, first[0].session_id)
    assert stored(people.alice, named).session_id == "s1"
    events = AuditEvent.objects.filter(action="memory.sessions_backfill")
    assert sorted(e.metadata["turns"] for e in events) == [1, 3]


def test_sessions_assign_leaves_named_sessions_and_other_memories_alone() -> None:
    def doc(n: int, minutes: float, session: str | None = None, kind: str = "episodic"):
        return MemoryDoc(
            id=str(n),
            tenant_id="t",
            user_id="u",
            memory_type=kind,  # type: ignore[arg-type]
            text=str(n),
            created_at=at(minutes),
            timestamp=at(minutes),
            session_id=session,
        )

    fact = doc(0, 0, kind="semantic")
    docs = [doc(2, 10), doc(1, 0, "x"), fact, doc(3, 100)]
    assigned = sessions_assign(docs, timedelta(minutes=15))

    assert [d.id for d in assigned] == ["2", "3"]
    assert docs[0].session_id == "x" and docs[0].session_inferred
    assert docs[1].session_id == "x" and not docs[1].session_inferred
    assert fact.session_id is None and not fact.session_inferred
    assert docs[3].session_id not in (None, "x")
