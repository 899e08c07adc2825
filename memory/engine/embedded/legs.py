"""The recall legs over the store: FTS5 BM25 (lexical) and numpy cosine (dense) on the owners'
snapshots, each scored with ``base.signal_multiplier`` itself."""

from __future__ import annotations

import json
import sqlite3
import time

import numpy as np
import numpy.typing as npt

from memory.engine.base import signal_multiplier
from memory.engine.embedded import archive, snapshots
from memory.engine.embedded.scopes import owner_key, recall_owners
from memory.engine.embedded.snapshots import Candidate, Snapshot
from memory.engine.embedded.store import Store, decode, unit_vector
from memory.engine.types import LegHit, LegQuery, LegResults, MemoryDoc, ReadScope
from memory.query import lexical_terms


def recall_legs(store: Store, scope: ReadScope, query: LegQuery) -> LegResults:
    started = time.perf_counter()
    owners = recall_owners(scope, query.filter)
    vector = None
    if query.dense and query.vector is not None:
        vector = unit_vector(query.vector, store.dims)
    with store.transaction() as conn:
        only = _seqs_of(conn, query.filter.ids)
        masked = []
        for owner, kinds in owners:
            snapshot = store.snapshot(conn, owner, scope.tenant_id)
            masked.append((snapshot, snapshots.recall_mask(snapshot, kinds, query.filter, only)))
        lexical: list[Candidate] = []
        if query.lexical:
            lexical = _lexical(conn, [owner for owner, _ in owners], masked, query)
        dense: list[Candidate] = []
        if vector is not None:
            for snapshot, mask in masked:
                dense += snapshots.dense_candidates(snapshot, mask, vector, query)
        if query.filter.include_archived and scope.user_id is not None:
            lexical, dense = _with_archived(conn, store, scope, query, vector, lexical, dense)
        dense = _top(dense, query.size)
        docs = _docs_by_seq(conn, {candidate.seq for candidate in lexical + dense})
    return LegResults(
        lexical=_hits(lexical, docs, query),
        dense=_hits(dense, docs, query),
        took_ms=(time.perf_counter() - started) * 1000.0,
    )


def _with_archived(
    conn: sqlite3.Connection,
    store: Store,
    scope: ReadScope,
    query: LegQuery,
    vector: snapshots.Vector | None,
    lexical: list[Candidate],
    dense: list[Candidate],
) -> tuple[list[Candidate], list[Candidate]]:
    """Both legs' candidates with the user's archived facts ranked in (``archive``)."""
    assert scope.user_id is not None  # noqa: S101 - the caller checked
    owner = owner_key(scope.tenant_id, scope.user_id)
    kinds = tuple(kind for kind in query.filter.memory_types if kind != "catalog")
    terms = lexical_terms(query.text) if query.lexical else []
    match = _match_expression(terms, [owner], "{text name description trigger_text}")
    more_lexical, more_dense = archive.candidates(
        conn,
        owner=owner,
        tenant_id=scope.tenant_id,
        kinds=kinds,
        query=query,
        vector=vector,
        lexical=match if terms else None,
        dims=store.dims,
    )
    return _top(lexical + more_lexical, query.size), dense + more_dense


def _seqs_of(conn: sqlite3.Connection, ids: tuple[str, ...] | None) -> npt.NDArray[np.int64] | None:
    """The rows of the filter's ``ids`` (None: no such filter)."""
    if ids is None:
        return None
    rows = conn.execute(
        "SELECT seq FROM memories WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(list(ids)),),
    ).fetchall()
    return np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))


def _lexical(
    conn: sqlite3.Connection,
    owners: list[str],
    masked: list[tuple[Snapshot, snapshots.Mask]],
    query: LegQuery,
) -> list[Candidate]:
    terms = lexical_terms(query.text)
    if not terms or not owners:
        return []
    # Field weights as the Elasticsearch backend's; the owner column only filters.
    scores: dict[int, float] = dict(
        conn.execute(
            "SELECT rowid, -bm25(memories_fts, 0, 1, 0.5, 0.3, 0.5) FROM memories_fts"
            " WHERE memories_fts MATCH ?",
            (_match_expression(terms, owners, "{text name description trigger_text}"),),
        ).fetchall()
    )
    boost = max(0.0, float(query.context_boost))
    if boost > 0.0:
        # A turn's lexical context, with its own statistics, added at ``context_boost`` (as
        # Elasticsearch's most_fields sums the fields' scores).
        for seq, score in conn.execute(
            "SELECT rowid, -bm25(memories_context_fts, 0, 1) FROM memories_context_fts"
            " WHERE memories_context_fts MATCH ?",
            (_match_expression(terms, owners, "context"),),
        ):
            scores[seq] = scores.get(seq, 0.0) + boost * score
    seqs = np.fromiter(scores.keys(), dtype=np.int64, count=len(scores))
    bm25 = np.fromiter(scores.values(), dtype=np.float64, count=len(scores))
    candidates: list[Candidate] = []
    for snapshot, mask in masked:
        candidates += snapshots.lexical_candidates(snapshot, mask, seqs, bm25, query)
    return _top(candidates, query.size)


def _match_expression(terms: list[str], owners: list[str], columns: str) -> str:
    """An FTS5 query for any of ``terms`` (each quoted, so user text is never FTS5 syntax) in
    ``columns`` of the owners' documents."""
    return f"owner : ({_any_of(owners)}) AND {columns} : ({_any_of(terms)})"


def _any_of(tokens: list[str]) -> str:
    return " OR ".join('"' + token.replace('"', '""') + '"' for token in dict.fromkeys(tokens))


def _top(candidates: list[Candidate], size: int) -> list[Candidate]:
    return sorted(candidates, key=lambda candidate: -candidate.score)[:size]


def _docs_by_seq(conn: sqlite3.Connection, seqs: set[int]) -> dict[int, MemoryDoc]:
    """The candidates' documents, for the exact ranking signals (no embeddings: not needed)."""
    rows = conn.execute(
        "SELECT seq, source FROM memories_all WHERE seq IN (SELECT value FROM json_each(?))",
        (json.dumps(sorted(seqs)),),
    ).fetchall()
    return {seq: decode(source) for seq, source in rows}


def _hits(candidates: list[Candidate], docs: dict[int, MemoryDoc], query: LegQuery) -> list[LegHit]:
    """The leg's hits, scored with ``signal_multiplier`` itself."""
    scored = [
        (c.raw * signal_multiplier(docs[c.seq], query.ranking, query.now), docs[c.seq])
        for c in candidates
    ]
    scored.sort(key=lambda pair: -pair[0])
    return [
        LegHit(
            id=doc.id,
            score=score,
            rank=n,
            superseded_by=doc.superseded_by,
            session_id=doc.session_id if doc.memory_type == "episodic" else None,
            timestamp=doc.timestamp if doc.memory_type == "episodic" and doc.session_id else None,
        )
        for n, (score, doc) in enumerate(scored, 1)
    ]
