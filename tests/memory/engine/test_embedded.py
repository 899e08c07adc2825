"""What the embedded backend adds beyond the contract: per-process snapshots that stay fresh,
ranking that agrees with ``signal_multiplier``, and user text that is never FTS5 syntax."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from memory.engine.base import EngineError, signal_multiplier
from memory.engine.embedded import EmbeddedBackend
from memory.engine.types import PERSONAL_TYPES, LegQuery, Ranking, ReadScope, RecallFilter
from tests.memory.engine.conftest import DIMS, make_doc, vec

NOW = datetime.now(UTC)
SCOPE = ReadScope(tenant_id="acme", user_id="alice")


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "memory.sqlite3"


def backend_at(path: Path, dims: int = DIMS) -> EmbeddedBackend:
    backend = EmbeddedBackend(path=path, dims=dims)
    backend.ensure_ready()
    return backend


def legs(backend: EmbeddedBackend, text: str, vector=None, size: int = 80, **filters):
    query = LegQuery(
        text=text,
        vector=vector or vec(0),
        filter=RecallFilter(**filters),
        ranking=Ranking(),
        now=NOW,
        size=size,
    )
    return backend.recall_legs(SCOPE, query)


def test_a_snapshot_sees_what_another_process_wrote_since(path):
    reader, writer = backend_at(path), backend_at(path)  # two caches, as two workers have
    kept = make_doc("acme", "alice", "semantic", "likes green tea")
    replaced = make_doc("acme", "alice", "semantic", "likes black tea")
    forgotten = make_doc("acme", "alice", "semantic", "likes oolong tea")
    writer.write([kept, replaced, forgotten])
    assert {h.id for h in legs(reader, "tea").dense} == {kept.id, replaced.id, forgotten.id}

    added = make_doc("acme", "alice", "semantic", "likes mint tea")
    writer.write([added])
    writer.update(replaced, lambda current: {"superseded_by": added.id})
    writer.update(kept, lambda current: {"text": "likes green tea and coffee"})
    assert {h.id for h in legs(reader, "tea").dense} == {kept.id, forgotten.id, added.id}
    assert [h.id for h in legs(reader, "coffee").lexical] == [kept.id]

    writer.delete(forgotten)
    assert {h.id for h in legs(reader, "tea").dense} == {kept.id, added.id}
    assert forgotten.id not in {h.id for h in legs(reader, "oolong").lexical}


def test_the_dense_leg_keeps_the_best_by_signal_multiplier(path):
    backend = backend_at(path)
    rng = np.random.default_rng(3)
    docs = []
    for n in range(300):
        kind = PERSONAL_TYPES[rng.integers(3)]
        docs.append(
            make_doc(
                "acme",
                "alice",
                kind,
                f"doc {n}",
                embedding=[float(x) for x in rng.uniform(-1, 1, DIMS)],
                when=NOW - timedelta(days=float(rng.uniform(0, 3000))),
                use_count=int(rng.integers(0, 40)),
            )
        )
    docs += [make_doc("acme", None, "catalog", "shared", embedding=vec(n)) for n in range(DIMS)]
    backend.write(docs)
    target = vec(1, 3)

    def expected_score(doc):
        a, b = np.asarray(doc.embedding), np.asarray(target)
        cosine = a @ b / (np.linalg.norm(a) * np.linalg.norm(b))
        return (1 + cosine) / 2 * signal_multiplier(doc, Ranking(), NOW)

    best = sorted(docs, key=expected_score, reverse=True)[:15]
    found = legs(backend, "unrelated", vector=target, size=15).dense
    assert [h.id for h in found] == [d.id for d in best]
    assert [h.score for h in found] == pytest.approx([expected_score(d) for d in best], rel=1e-5)


def test_user_text_is_never_query_syntax(path):
    backend = backend_at(path)
    doc = make_doc("acme", "alice", "semantic", 'the "quoted" NEAR(thing) -minus col:on AND')
    backend.write([doc])
    for text in ['"', "NEAR(", "col:on", "-minus", "AND OR NOT", "^x* {a b}:c", "", "  ?! "]:
        legs(backend, text)  # no FTS5 syntax error escapes
    assert [h.id for h in legs(backend, 'NEAR(thing) "quoted').lexical] == [doc.id]


def test_it_refuses_vectors_of_the_wrong_shape(path):
    backend = backend_at(path)
    with pytest.raises(EngineError):
        backend.write([make_doc("acme", "alice", "semantic", "x", embedding=[1.0, 0.0])])
    with pytest.raises(EngineError):
        backend.write([make_doc("acme", "alice", "semantic", "x", embedding=[0.0] * DIMS)])
    with pytest.raises(EngineError):
        legs(backend, "x", vector=[1.0, 0.0])
    with pytest.raises(EngineError):
        backend_at(path, dims=DIMS * 2)  # another embedding model


def _as_version_1(path: Path) -> None:
    """Turn a store into what version 1 wrote: no session column or index, no context table,
    no archive, no schema row."""
    import sqlite3

    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(
        """
        DROP VIEW memories_all;
        DROP TABLE memories_archive;
        DROP TABLE memories_archive_fts;
        DROP INDEX memories_owner_session;
        ALTER TABLE memories DROP COLUMN session_id;
        DROP TABLE memories_context_fts;
        DELETE FROM settings WHERE name = 'schema';
        """
    )
    conn.close()


def test_a_version_1_store_is_migrated_in_place(path):
    import sqlite3

    from memory.engine.embedded.store import SCHEMA_VERSION

    start = NOW - timedelta(hours=1)
    asked = make_doc("acme", "alice", "episodic", "where is the party", session_id="s1", when=start)
    fact = make_doc("acme", "alice", "semantic", "likes karaoke")
    backend_at(path).write([asked, fact])
    _as_version_1(path)

    migrated = backend_at(path)  # ensure_ready migrates

    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM settings WHERE name = 'schema'").fetchone() == (
        SCHEMA_VERSION,
    )
    assert dict(conn.execute("SELECT id, session_id FROM memories")) == {
        asked.id: "s1",
        fact.id: None,
    }
    conn.close()
    found = migrated.previous_turn(tenant_id="acme", user_id="alice", session_id="s1", before=NOW)
    assert found is not None and found.id == asked.id
    answer = make_doc(
        "acme",
        "alice",
        "episodic",
        "karaoke at Lucky Voice",
        session_id="s1",
        when=start + timedelta(minutes=1),
        context=found.text,
        context_ids=[found.id],
    )
    migrated.write([answer])
    query = LegQuery(
        text="party karaoke",
        vector=vec(0),
        filter=RecallFilter(),
        ranking=Ranking(),
        now=NOW,
        context_boost=0.5,
    )
    assert {h.id for h in migrated.recall_legs(SCOPE, query).lexical} == {
        asked.id,
        answer.id,
        fact.id,
    }
    assert migrated.delete(asked)  # clears the answer's context, exactly
    assert {h.id for h in migrated.recall_legs(SCOPE, query).lexical} == {answer.id, fact.id}
    assert [h.id for h in legs(migrated, "party").lexical] == []
    backend_at(path)  # a second ensure_ready changes nothing


def test_a_version_2_store_gets_the_project_column_from_metadata(path):
    """Schema 3: ``project`` filled from ``metadata.project`` (what agents' writes kept before
    memories had the field), in the column recall filters on and in the source reads return."""
    import sqlite3

    from memory.engine.embedded.store import SCHEMA_VERSION

    agent_note = make_doc("acme", "alice", "semantic", "use uv", metadata={"project": "p1"})
    other = make_doc("acme", "alice", "semantic", "use poetry", metadata={"project": "p2"})
    plain = make_doc("acme", "alice", "semantic", "use pip", metadata={"origin": "chat"})
    backend_at(path).write([agent_note, other, plain])
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(
        "DROP VIEW memories_all;"  # the archive's view (a version 2 store had none)
        " ALTER TABLE memories DROP COLUMN project;"
        " UPDATE settings SET value = 2 WHERE name = 'schema';"
    )
    conn.close()

    migrated = backend_at(path)

    conn = sqlite3.connect(path)
    assert conn.execute("SELECT value FROM settings WHERE name = 'schema'").fetchone() == (
        SCHEMA_VERSION,
    )
    conn.close()

    def project_of(doc_id: str) -> str | None:
        got = migrated.get(SCOPE, doc_id)
        assert got is not None
        return got.project

    assert project_of(agent_note.id) == "p1"
    assert project_of(plain.id) is None
    assert {h.id for h in legs(migrated, "use", project="p1").lexical} == {agent_note.id}
    assert {h.id for h in legs(migrated, "use", project="p1", include_unscoped=True).lexical} == {
        agent_note.id,
        plain.id,
    }
    backend_at(path)  # a second ensure_ready changes nothing
    assert project_of(other.id) == "p2"


def test_a_context_is_scored_on_its_own_statistics(path):
    """The context table's words never change how a turn's own words score (FTS5 normalises
    BM25 by the whole row's length: one table for both would)."""
    store = backend_at(path)
    plain = make_doc("acme", "alice", "episodic", "karaoke tonight")
    store.write([plain])
    before = {h.id: h.score for h in legs(store, "karaoke").lexical}
    store.update(plain, lambda current: {"context": "a long " * 50 + "preceding message"})
    after = {h.id: h.score for h in legs(store, "karaoke").lexical}
    assert after == pytest.approx(before)


def test_the_previous_turn_read_uses_the_session_index(path):
    import sqlite3

    backend_at(path)
    conn = sqlite3.connect(path)
    plan = " ".join(
        str(row[-1])
        for row in conn.execute(
            "EXPLAIN QUERY PLAN SELECT source FROM memories WHERE owner = ? AND session_id = ?"
            " AND timestamp <= ? AND tenant_id = ? AND memory_type = 'episodic'"
            " ORDER BY timestamp DESC, seq DESC LIMIT 1",
            ("o", "s", "t", "acme"),
        )
    )
    conn.close()
    assert "memories_owner_session" in plan
