"""The embedded backend at scale: the dense index kept in step with the rows and filtered to
the caller's, snapshots that a usage bump or the catalog's read do not copy or evict, and a
lexical leg whose work a long message cannot blow up."""

from __future__ import annotations

import sqlite3
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memory.engine.embedded import EmbeddedBackend, legs
from memory.engine.embedded.scopes import owner_key
from memory.engine.embedded.snapshots import Snapshot
from memory.engine.types import (
    LegQuery,
    MemoryDoc,
    Ranking,
    ReadScope,
    RecallFilter,
    SessionTurn,
    UsageBump,
)
from memory.query import lexical_terms

NOW = datetime.now(UTC)
ALICE = ReadScope(tenant_id="acme", user_id="alice")
DIMS = 32


def unit(rng: np.random.Generator, near: np.ndarray | None = None) -> list[float]:
    values = rng.standard_normal(DIMS) if near is None else near + 0.05 * rng.standard_normal(DIMS)
    return [float(x) for x in values / np.linalg.norm(values)]


def doc(user: str | None, text: str, embedding: list[float], kind: str = "semantic") -> MemoryDoc:
    return MemoryDoc(
        id=uuid.uuid4().hex,
        tenant_id="acme",
        user_id=user,
        memory_type=kind if user is not None else "catalog",  # type: ignore[arg-type]
        text=text,
        created_at=NOW,
        timestamp=NOW,
        embedding=embedding,
        last_used_at=NOW if kind == "semantic" else None,
    )


def backend_at(path: Path, **options: int) -> EmbeddedBackend:
    backend = EmbeddedBackend(path=path, dims=DIMS, **options)
    backend.ensure_ready()
    return backend


def recall(backend, text, vector, scope=ALICE, size=80, **filters):
    query = LegQuery(
        text=text,
        vector=list(vector),
        filter=RecallFilter(**filters),
        ranking=Ranking(apply_decay=False),
        now=NOW,
        size=size,
    )
    return backend.recall_legs(scope, query)


def snapshot_of(backend: EmbeddedBackend, user: str | None):
    return backend._store._cache.get(owner_key("acme", user))


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "memory.sqlite3"


def test_the_dense_index_follows_writes_forgets_and_erasure(path):
    rng = np.random.default_rng(1)
    backend = backend_at(path, ann_min_rows=50)
    target = np.asarray(unit(rng))
    rows = [doc("alice", f"fact {n}", unit(rng)) for n in range(120)]
    near = [doc("alice", f"close fact {n}", unit(rng, target)) for n in range(5)]
    backend.write(rows + near)
    first = recall(backend, "fact", target, size=5)
    assert snapshot_of(backend, "alice").dense is not None  # the index served it
    assert {h.id for h in first.dense} == {d.id for d in near}

    assert backend.delete(near[0])  # a forget
    erased = backend.delete_ids(
        tenant_id="acme", user_id="alice", memory_type="semantic", ids=[near[1].id]
    )
    assert erased == [near[1].id]
    moved = near[2]
    backend.write([doc("alice", "a new close fact", unit(rng, target))])
    backend.update(moved, lambda current: {"embedding": unit(rng)})  # now far from the target
    after = {h.id for h in recall(backend, "fact", target, size=5).dense}
    assert near[0].id not in after and near[1].id not in after and moved.id not in after
    assert {near[3].id, near[4].id} <= after
    index = snapshot_of(backend, "alice").dense
    assert len(index) == 120 + 5 + 1 - 2  # the forgotten and the erased rows left it


def test_a_forgotten_row_is_never_returned_by_a_stale_index(path):
    rng = np.random.default_rng(2)
    reader, writer = backend_at(path, ann_min_rows=50), backend_at(path, ann_min_rows=50)
    target = np.asarray(unit(rng))
    close = doc("alice", "the closest", unit(rng, target))
    writer.write([close] + [doc("alice", f"r {n}", unit(rng)) for n in range(80)])
    assert recall(reader, "r", target, size=1).dense[0].id == close.id
    writer.delete(close)  # another process forgets it: the reader's index still holds it
    assert close.id not in {h.id for h in recall(reader, "r", target).dense}


@pytest.mark.parametrize("ann_min_rows", [50, 100_000], ids=["dense-index", "matrix"])
def test_a_forget_drops_its_row_from_the_cached_snapshot_without_reading_every_row(
    path, ann_min_rows
):
    """A delete keeps the seqs it took (``purges``): a process whose snapshot and index are
    a few deletes behind drops those rows instead of reading all of the owner's again (6.5 s
    per recall after each forget at a million memories, before)."""
    rng = np.random.default_rng(20)
    backend = backend_at(path, ann_min_rows=ann_min_rows)
    target = np.asarray(unit(rng))
    near = [doc("alice", f"close fact {n}", unit(rng, target)) for n in range(3)]
    backend.write(near + [doc("alice", f"fact {n}", unit(rng)) for n in range(200)])
    recall(backend, "fact", target)

    def forget_and_recall(victim: MemoryDoc) -> int:
        backend.delete(victim)
        return _steps(backend, lambda: recall(backend, "fact", target, size=5))

    small = forget_and_recall(near[0])
    backend.write([doc("alice", f"more {n}", unit(rng)) for n in range(4000)])
    recall(backend, "fact", target)
    large = forget_and_recall(near[1])

    hits = recall(backend, "fact", target, size=5)
    fresh = recall(backend_at(path, ann_min_rows=ann_min_rows), "fact", target, size=5)
    assert near[0].id not in {h.id for h in hits.dense + hits.lexical}
    assert near[1].id not in {h.id for h in hits.dense + hits.lexical}
    assert hits.dense[0].id == near[2].id
    assert [h.id for h in hits.dense] == [h.id for h in fresh.dense]  # as a new process reads
    assert len(snapshot_of(backend, "alice").seqs) == 3 + 200 + 4000 - 2
    assert large <= small + 40, (small, large)  # not a pass over 4,000 more rows


def test_a_snapshot_more_deletes_behind_than_are_kept_reads_the_rows(path, monkeypatch):
    monkeypatch.setattr("memory.engine.embedded.store.PURGES_KEPT", 2)
    rng = np.random.default_rng(21)
    reader, writer = backend_at(path), backend_at(path)
    rows = [doc("alice", f"fact {n}", unit(rng)) for n in range(20)]
    writer.write(rows)
    target = np.asarray(rows[0].embedding)
    assert recall(reader, "fact", target, size=1).dense[0].id == rows[0].id
    for victim in rows[:3]:  # three deletes; the reader's snapshot is behind all of them
        writer.delete(victim)

    got = {h.id for h in recall(reader, "fact", target).dense}

    assert got == {d.id for d in rows[3:]}
    conn = sqlite3.connect(path)
    kept = [row[0] for row in conn.execute("SELECT purged FROM purges ORDER BY purged")]
    conn.close()
    assert kept == [2, 3]


def _file_bytes(path: Path) -> bytes:
    """The store's file and its WAL, as a copy of the disk would show them."""
    wal = Path(f"{path}-wal")
    return path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def test_erased_text_and_terms_leave_the_files_after_the_expunge(path):
    """A forget overwrites the row's bytes at once (``secure_delete``), but its terms stay in
    the full-text segments (a contentless delete writes them again as a marker) and in the
    WAL's older page images; the erasure's expunge merges and truncates them away."""
    rng = np.random.default_rng(22)
    backend = backend_at(path)
    others = [doc("alice", f"ordinary fact {n} about gardening", unit(rng)) for n in range(200)]
    secret = doc("alice", "my bank pin is zanzibarquux 4711", unit(rng))
    backend.write([*others[:100], secret, *others[100:]])
    backend.write([doc("bob", "bob likes zanzibar", unit(rng))])

    erased = backend.delete_ids(
        tenant_id="acme", user_id="alice", memory_type="semantic", ids=[secret.id]
    )
    assert erased == [secret.id]
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    assert b"bank pin is" not in path.read_bytes()  # the row itself: overwritten
    assert b"zanzibarquux" in _file_bytes(path)  # its terms: still in a segment

    assert backend.expunge_deleted(tenant_id="acme", user_id="alice")

    assert b"zanzibarquux" not in _file_bytes(path)
    assert b"bank pin" not in _file_bytes(path)
    found = recall(backend, "gardening zanzibar", unit(rng), include_catalog=False)
    assert found.lexical and {h.id for h in found.lexical} <= {d.id for d in others}
    bobs = recall(backend, "zanzibar", unit(rng), scope=ReadScope(tenant_id="acme", user_id="bob"))
    assert bobs.lexical and bobs.lexical[0].score > 0


def test_one_users_index_never_returns_another_users_rows(path):
    rng = np.random.default_rng(3)
    backend = backend_at(path, ann_min_rows=50)
    target = np.asarray(unit(rng))
    alice = [doc("alice", f"a {n}", unit(rng)) for n in range(100)]
    bob = [doc("bob", f"b {n}", unit(rng, target)) for n in range(100)]  # all nearer
    backend.write(alice + bob)
    got = {h.id for h in recall(backend, "b", target, include_catalog=False).dense}
    assert got and got <= {d.id for d in alice}


def test_a_small_filtered_row_set_is_ranked_exactly(path):
    rng = np.random.default_rng(4)
    backend = backend_at(path, ann_min_rows=50)
    target = np.asarray(unit(rng))
    facts = [doc("alice", f"f {n}", unit(rng)) for n in range(200)]
    procedures = [doc("alice", f"p {n}", unit(rng), kind="procedural") for n in range(12)]
    backend.write(facts + procedures)
    got = recall(backend, "p", target, size=5, memory_types=("procedural",)).dense
    cosine = {d.id: float(np.dot(d.embedding or [], target)) for d in procedures}
    assert [h.id for h in got] == sorted(cosine, key=lambda i: -cosine[i])[:5]
    assert snapshot_of(backend, "alice").dense is not None


def test_the_index_finds_what_exact_search_finds(path):
    """recall@80 of the dense leg through the index against exact cosine: clustered vectors
    (as sentence embeddings are), 30k rows, 20 queries."""
    rng = np.random.default_rng(5)
    centres = rng.standard_normal((300, DIMS))
    vectors = centres[rng.integers(0, 300, 30_000)] + 0.4 * rng.standard_normal((30_000, DIMS))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    backend = backend_at(path, ann_min_rows=20_000)
    docs = [doc("alice", f"m {n}", vectors[n].tolist()) for n in range(30_000)]
    for start in range(0, 30_000, 5_000):
        backend.write(docs[start : start + 5_000])
    found = []
    for q in range(20):
        query = centres[q] + 0.4 * rng.standard_normal(DIMS)
        query /= np.linalg.norm(query)
        exact = {docs[i].id for i in np.argsort(-(vectors @ query))[:80]}
        got = {h.id for h in recall(backend, "m", query, size=80).dense}
        found.append(len(exact & got) / 80)
    assert snapshot_of(backend, "alice").dense is not None
    assert np.mean(found) >= 0.95, found


def test_a_usage_bump_shares_the_snapshots_matrix(path):
    rng = np.random.default_rng(6)
    backend = backend_at(path)  # small: the exact path, with a matrix
    rows = [doc("alice", f"fact {n}", unit(rng)) for n in range(50)]
    backend.write(rows)
    recall(backend, "fact", unit(rng))
    before = snapshot_of(backend, "alice")
    backend.record_usage([UsageBump(doc=rows[0], count=2, last_used_at=NOW)])
    recall(backend, "fact", unit(rng))
    after = snapshot_of(backend, "alice")
    assert after.rev > before.rev
    assert after.units is before.units  # not copied
    assert after.use_count[0] == before.use_count[0] + 2


def test_new_rows_are_appended_in_the_matrixs_room_and_older_snapshots_keep_theirs(path):
    rng = np.random.default_rng(16)
    backend = backend_at(path)  # small: the exact path, with a matrix
    first = [doc("alice", f"fact {n}", unit(rng)) for n in range(50)]
    backend.write(first)
    recall(backend, "fact", unit(rng))
    loaded = snapshot_of(backend, "alice")
    snapshots = [loaded]
    written = list(first)
    for n in range(3):  # a turn at a time, as a chat writes them
        written.append(doc("alice", f"turn {n}", unit(rng)))
        backend.write(written[-1:])
        recall(backend, "fact", unit(rng))
        snapshots.append(snapshot_of(backend, "alice"))

    newest = snapshots[-1]
    assert newest.room is not None and newest.units.base is newest.room.buffer
    assert all(s.room is newest.room for s in snapshots[1:])  # one buffer: never copied again
    assert [len(s.units) for s in snapshots] == [50, 51, 52, 53]
    expected = np.array([d.embedding for d in written], dtype=np.float32)
    for s in snapshots:  # each sees exactly its own rows, whatever was appended after it
        assert np.array_equal(s.units, expected[: len(s.units)])
    assert recall(backend, "turn", written[-1].embedding, size=5).dense[0].id == written[-1].id

    # A usage bump (the same vectors) keeps the room: the next write still appends in place.
    backend.record_usage([UsageBump(doc=first[0], count=1, last_used_at=NOW)])
    recall(backend, "fact", unit(rng))
    bumped = snapshot_of(backend, "alice")
    backend.write([doc("alice", "turn after the bump", unit(rng))])
    recall(backend, "fact", unit(rng))
    after = snapshot_of(backend, "alice")
    assert bumped.room is newest.room and after.room is newest.room
    assert after.units.base is newest.room.buffer and len(after.units) == 54


def _rows(rng: np.random.Generator, seqs: list[int]) -> tuple[list[Any], np.ndarray]:
    vectors = np.array([unit(rng) for _ in seqs], dtype=np.float32)
    rows = [
        (seq, "semantic", False, "2026-01-01T00:00:00", float("nan"), 0.0, "", True, v.tobytes())
        for seq, v in zip(seqs, vectors, strict=True)
    ]
    return rows, vectors


def test_a_matrix_room_is_claimed_once_and_a_changed_vector_is_copied():
    rng = np.random.default_rng(17)
    rows, base_vectors = _rows(rng, list(range(1, 11)))
    base = Snapshot.from_rows(rows, rev=1, purged=0, dims=DIMS)

    def with_rows(snapshot: Snapshot, seqs: list[int], rev: int) -> tuple[Snapshot, np.ndarray]:
        rows, vectors = _rows(rng, seqs)
        return snapshot.merged(Snapshot.from_rows(rows, rev=rev, purged=0, dims=DIMS)), vectors

    first, v11 = with_rows(base, [11], 2)  # the first append makes the room (one copy)
    second, v12 = with_rows(first, [12], 3)  # appended in place
    racing, v13 = with_rows(first, [13], 3)  # from the same snapshot: the room is claimed
    room = first.room
    assert room is not None and second.room is room and second.units.base is room.buffer
    assert racing.room is not room
    assert np.array_equal(second.units, np.vstack([base_vectors, v11, v12]))
    assert np.array_equal(racing.units, np.vstack([base_vectors, v11, v13]))
    assert np.array_equal(first.units, np.vstack([base_vectors, v11]))
    assert np.array_equal(base.units, base_vectors)

    changed, v5 = with_rows(second, [5], 4)  # a known row's new vector: a copy, never in place
    assert changed.units.base is not room.buffer
    assert np.array_equal(changed.units[4], v5[0])
    assert np.array_equal(second.units[4], base_vectors[4])


def _steps(backend: EmbeddedBackend, read: Any) -> int:
    """SQLite virtual-machine steps (in hundreds) the read takes on this thread's connection."""
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    conn = backend._store.connection()
    conn.set_progress_handler(count, 100)
    try:
        read()
    finally:
        conn.set_progress_handler(None, 100)
    return steps


def test_the_newest_memory_is_read_without_visiting_the_owners_rows(path):
    rng = np.random.default_rng(18)
    backend = backend_at(path)
    turns = [doc("alice", f"turn {n}", unit(rng), kind="episodic") for n in range(200)]
    backend.write(turns)
    small = _steps(backend, lambda: backend.newest_timestamp(ALICE))
    backend.write([doc("alice", f"more {n}", unit(rng), kind="episodic") for n in range(4000)])
    large = _steps(backend, lambda: backend.newest_timestamp(ALICE))

    assert backend.newest_timestamp(ALICE) == NOW
    assert large <= small + 2  # an index probe per owner and kind, not a pass over 4,200 rows


def test_a_sessions_neighbours_are_read_through_its_own_index(path):
    rng = np.random.default_rng(19)
    backend = backend_at(path)

    def turns(session: str, count: int) -> list[MemoryDoc]:
        made = [doc("alice", f"{session} {n}", unit(rng), kind="episodic") for n in range(count)]
        for n, turn in enumerate(made):
            turn.session_id = session
            turn.timestamp = NOW - timedelta(minutes=count - n)
        return made

    mine = turns("s-1", 20)
    backend.write(mine)
    asked = [SessionTurn(id=mine[10].id, session_id="s-1", timestamp=mine[10].timestamp)]

    def reads() -> None:
        backend.session_neighbours(ALICE, asked, depth=2)
        backend.previous_turn(
            tenant_id="acme", user_id="alice", session_id="s-1", before=mine[10].timestamp
        )

    small = _steps(backend, reads)
    backend.write(turns("s-2", 4000))  # another session's turns, as old and as new
    large = _steps(backend, reads)

    found = backend.session_neighbours(ALICE, asked, depth=2)[mine[10].id]
    assert found.before == (mine[9].id, mine[8].id) and found.after == (mine[11].id, mine[12].id)
    previous = backend.previous_turn(
        tenant_id="acme", user_id="alice", session_id="s-1", before=mine[10].timestamp
    )
    assert previous is not None and previous.id == mine[10].id  # at or before: itself
    assert large <= small + 2


def test_a_store_of_before_gets_the_owner_time_index(path):
    backend_at(path).write([doc("alice", "a fact", [1.0] + [0.0] * (DIMS - 1))])
    conn = sqlite3.connect(path)
    conn.execute("DROP INDEX memories_owner_time")
    conn.close()

    backend_at(path)  # a new process on the old store

    conn = sqlite3.connect(path)
    names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    conn.close()
    assert {"memories_owner_time", "memories_owner_type", "memories_owner_session"} <= names


def test_the_catalogs_read_does_not_evict_the_users_snapshot(path):
    rng = np.random.default_rng(7)
    backend = backend_at(path, cache_bytes=1024)  # smaller than either snapshot
    backend.write([doc("alice", f"fact {n}", unit(rng)) for n in range(40)])
    backend.write([doc(None, f"product {n}", unit(rng)) for n in range(40)])
    recall(backend, "fact", unit(rng))
    assert snapshot_of(backend, "alice") is not None
    assert snapshot_of(backend, None) is not None


def test_the_bounded_lexical_leg_keeps_the_top_hits(path, monkeypatch):
    rng = np.random.default_rng(8)
    backend = backend_at(path)
    texts = [f"note {n} about the weather and the garden" for n in range(300)]
    texts += [f"the heron visited the garden pond {n}" for n in range(5)]
    backend.write([doc("alice", text, unit(rng)) for text in texts])
    wide = recall(backend, "garden weather heron pond", unit(rng), size=10).lexical
    monkeypatch.setattr(legs, "LEXICAL_FULL", 10)
    monkeypatch.setattr(legs, "LEXICAL_POSTINGS", 50)
    bounded = recall(backend, "garden weather heron pond", unit(rng), size=10).lexical
    assert [h.id for h in bounded[:5]] == [h.id for h in wide[:5]]


def test_a_long_message_reads_only_its_rare_terms(path, monkeypatch):
    rng = np.random.default_rng(9)
    backend = backend_at(path)
    texts = [f"my sister called about the car and the weather today {n}" for n in range(400)]
    rare = doc("alice", "the zeppelin tickets for Lisbon are booked", unit(rng))
    backend.write([doc("alice", text, unit(rng)) for text in texts] + [rare])
    monkeypatch.setattr(legs, "LEXICAL_FULL", 100)
    monkeypatch.setattr(legs, "LEXICAL_POSTINGS", 100)
    message = "so my sister called about the car again and the weather today " * 6
    message += "and did I ever book those zeppelin tickets?"
    with backend._store.transaction() as conn:
        terms, postings, bounded = legs._bounded_terms(
            conn, backend._store, lexical_terms(message), 401
        )
    words = {term.strip("?") for term in terms}
    assert bounded and postings <= 100 and {"zeppelin", "tickets"} <= words
    assert not {"sister", "car", "weather"} & words
    hits = recall(backend, message, unit(rng), size=5).lexical
    assert hits[0].id == rare.id


def test_a_term_past_the_postings_bound_is_searched_in_its_newest_rows(path, monkeypatch):
    rng = np.random.default_rng(10)
    backend = backend_at(path)
    old = [doc("alice", f"the garden needs water {n}", unit(rng)) for n in range(200)]
    new = [doc("alice", f"the garden needs light {n}", unit(rng)) for n in range(100)]
    backend.write(old)
    backend.write(new)
    monkeypatch.setattr(legs, "LEXICAL_FULL", 10)
    monkeypatch.setattr(legs, "LEXICAL_POSTINGS", 60)

    hits = recall(backend, "garden", unit(rng), size=10).lexical

    assert legs._window_floor(300, 300) == 300 - 300 * 60 // 300  # the newest ~60 rows
    newest = {d.id for d in new}
    assert len(hits) == 10 and {h.id for h in hits} <= newest  # read from the newest rows
    # A filter the window cannot satisfy widens it to every row: the old rows are found.
    first_old = recall(backend, "garden", unit(rng), size=10, ids=tuple(d.id for d in old[:3]))
    assert {h.id for h in first_old.lexical} == {d.id for d in old[:3]}


def test_past_the_head_sqlite_keeps_the_best_matches_and_the_top_is_unchanged(path, monkeypatch):
    rng = np.random.default_rng(11)
    backend = backend_at(path)
    texts = [f"note {n} about the weather and the garden" for n in range(300)]
    texts += [f"the garden pond and the weather station {n}" for n in range(5)]
    backend.write([doc("alice", text, unit(rng)) for text in texts])
    reads: list[tuple[Any, ...]] = []
    monkeypatch.setattr(legs, "_bm25", spy(legs._bm25, reads))
    headed = recall(backend, "garden weather pond", unit(rng), size=10).lexical
    assert reads[-1][4] == legs.LEXICAL_FETCH * 10  # 305 matches: SQLite keeps the best 80
    monkeypatch.setattr(legs, "LEXICAL_FETCH", 1000)
    everything = recall(backend, "garden weather pond", unit(rng), size=10).lexical
    assert reads[-1][4] is None  # fewer matches than the head: every one reaches Python
    assert [(h.id, h.score) for h in headed] == [(h.id, h.score) for h in everything]


def spy(function, calls):
    def wrapper(*args, **kwargs):
        calls.append(args)
        return function(*args, **kwargs)

    return wrapper


def test_an_owner_holding_most_of_the_store_is_matched_without_its_key(path, monkeypatch):
    rng = np.random.default_rng(12)
    backend = backend_at(path)
    hoses = [doc("alice", f"the garden hose {n}", unit(rng)) for n in range(60)]
    sheds = [doc("bob", f"the garden shed {n}", unit(rng)) for n in range(10)]
    backend.write(hoses)
    backend.write(sheds)
    bob = ReadScope(tenant_id="acme", user_id="bob")
    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr(legs, "_bm25", spy(legs._bm25, calls))

    alices = recall(backend, "garden", unit(rng), size=80).lexical
    bobs = recall(backend, "garden", unit(rng), scope=bob, size=80).lexical

    assert calls[0][2] is None  # alice holds 60 of 70 rows: no owner key in MATCH
    assert owner_key("acme", "bob") in calls[1][2]  # bob's 10 (and the catalog): by key
    assert {h.id for h in alices} == {d.id for d in hoses}
    assert {h.id for h in bobs} == {d.id for d in sheds}
    monkeypatch.setattr(legs, "OWNED_SHARE", 2.0)  # every owner matched by its key
    keyed = recall(backend, "garden", unit(rng), size=80).lexical
    assert owner_key("acme", "alice") in calls[2][2]
    assert [(h.id, h.score) for h in keyed] == [(h.id, h.score) for h in alices]


def test_a_large_stores_term_frequencies_are_read_again_only_as_it_grows(path, monkeypatch):
    rng = np.random.default_rng(13)
    backend = backend_at(path)
    backend.write([doc("alice", f"the heron at the pond {n}", unit(rng)) for n in range(100)])
    monkeypatch.setattr(legs, "FREQUENCY_ROWS", 50)
    recall(backend, "heron", unit(rng))
    assert backend._store.term_frequencies["heron"] == (100, 100)
    backend.write([doc("alice", f"another heron {n}", unit(rng)) for n in range(4)])
    recall(backend, "heron", unit(rng))
    assert backend._store.term_frequencies["heron"] == (100, 100)  # within 5 %: kept
    backend.write([doc("alice", f"more herons {n}", unit(rng)) for n in range(10)])
    recall(backend, "heron", unit(rng))
    assert backend._store.term_frequencies["heron"] == (114, 114)  # past it: counted again
    monkeypatch.setattr(legs, "FREQUENCY_ROWS", 1000)
    backend._store.term_frequencies.clear()
    recall(backend, "heron", unit(rng))
    assert backend._store.term_frequencies == {}  # a small store counts every time
