"""The recall legs over the store: FTS5 BM25 (lexical) and numpy cosine or the owner's dense
index (dense) on the owners' snapshots, each scored with ``base.signal_multiplier`` itself.

Both legs are bounded. When a query's terms together match more than ``LEXICAL_FULL`` index
entries (their document frequencies, FTS5's own through ``fts5vocab``), the lexical leg drops
the terms found in more than ``COMMON_SHARE`` of the rows, keeps the rest rarest first while they
fit ``LEXICAL_POSTINGS`` (the rarest always), and SQLite itself keeps the best
``LEXICAL_FETCH`` x size by BM25 (``ORDER BY ... LIMIT``) instead of every match reaching
Python: the common words of a long turn never pull every row. When even the rarest term alone
has more than ``LEXICAL_POSTINGS`` entries (a query of common words only, over a million
memories), its newest rows are searched (a rowid window sized to hold about that many of them,
widened to every row if the caller's filter leaves too few), so no query scores a term's
whole posting list. Below ``LEXICAL_FULL`` every term is searched; when the terms match more
than ``LEXICAL_FETCH`` x size rows, SQLite keeps that many best by BM25 and the multipliers
choose among them, else every match is ranked with its multipliers.
"""

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

LEXICAL_POSTINGS = 20_000  # index entries one query may read (its rarest terms that fit)
LEXICAL_FULL = 20_000  # up to here every term is searched (no term dropped, no window)
COMMON_SHARE = 0.05  # past LEXICAL_FULL, a term in more of the rows than this is dropped
LEXICAL_FETCH = 8  # x size: the matches SQLite keeps by BM25 (all of them when fewer)
OWNED_SHARE = 0.5  # owners holding this share of the store's rows: matched without their key
FREQUENCY_ROWS = 100_000  # from this store size a term's frequency is read once per ...
FREQUENCY_GROWTH = 0.05  # ... this much growth of the store (kept per store, per term)
FREQUENCY_TERMS = 100_000  # the most terms a store keeps frequencies for
TERM_TABLES = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.atlas_query USING fts5("
    "term, tokenize='porter unicode61')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.atlas_query_tokens"
    " USING fts5vocab(temp, atlas_query, 'instance')",
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.atlas_index_tokens"
    " USING fts5vocab(main, memories_fts, 'row')",
)


def recall_legs(store: Store, scope: ReadScope, query: LegQuery) -> LegResults:
    started = time.perf_counter()
    owners = recall_owners(scope, query.filter)
    vector = None
    if query.dense and query.vector is not None:
        vector = unit_vector(query.vector, store.dims)
    with store.transaction() as conn:
        only = _seqs_of(conn, query.filter.ids)
        masked = []
        names = [owner for owner, _ in owners]
        for owner, kinds in owners:
            snapshot = store.snapshot(conn, owner, scope.tenant_id, keep=names)
            masked.append((snapshot, snapshots.recall_mask(snapshot, kinds, query.filter, only)))
        lexical: list[Candidate] = []
        if query.lexical:
            lexical = _lexical(conn, store, [owner for owner, _ in owners], masked, query)
        dense: list[Candidate] = []
        if vector is not None:
            for snapshot, mask in masked:
                dense += snapshots.dense_candidates(snapshot, mask, vector, query)
        if query.filter.include_archived and scope.user_id is not None:
            lexical, dense = _with_archived(conn, store, scope, query, vector, lexical, dense)
        dense = _top(dense, query.size)
        if vector is not None and any(snapshot.dense is not None for snapshot, _ in masked):
            dense = _exact_cosine(conn, dense, vector)
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
    store: Store,
    owners: list[str],
    masked: list[tuple[Snapshot, snapshots.Mask]],
    query: LegQuery,
) -> list[Candidate]:
    if not owners:
        return []
    (rows,) = conn.execute("SELECT coalesce(max(seq), 0) FROM memories").fetchone()
    words = list(dict.fromkeys(lexical_terms(query.text)))
    terms, postings, bounded = _bounded_terms(conn, store, words, int(rows))
    if not terms:
        return []
    head = LEXICAL_FETCH * query.size
    limit = head if postings > head else None
    floor = _window_floor(int(rows), postings) if bounded else 0
    # Owners that hold most of the store are matched without their key: the masks keep their
    # rows alone, and BM25 would otherwise count the documents of the owner's key on every
    # query (a pass over its whole posting list: ~25 ms for an owner of 1M memories). The key
    # weighs nothing in the score, so the scores are the same either way.
    owned = sum(len(snapshot.seqs) for snapshot, _ in masked)
    keys = owners if owned < OWNED_SHARE * rows else None
    while True:
        seqs, bm25, full = _bm25(conn, terms, keys, query, limit, floor)
        candidates: list[Candidate] = []
        for snapshot, mask in masked:
            candidates += snapshots.lexical_candidates(snapshot, mask, seqs, bm25, query)
        if limit is None or len(candidates) >= query.size:
            return _top(candidates, query.size)
        if full:
            limit *= 8  # the filter kept too few of SQLite's best: ask for more
        elif floor:
            floor = 0  # too few in the window: every row
        else:
            return _top(candidates, query.size)


def _window_floor(top: int, postings: int) -> int:
    """The lowest rowid a bounded search reads: 0 (every row) when its terms fit
    ``LEXICAL_POSTINGS``, else the start of the newest rows (up to ``top``) that hold about
    that many of their entries (spread evenly over the rowids, as far as this knows)."""
    if postings <= LEXICAL_POSTINGS:
        return 0
    return max(0, top - int(top * LEXICAL_POSTINGS / postings))


def _bm25(
    conn: sqlite3.Connection,
    terms: list[str],
    owners: list[str] | None,
    query: LegQuery,
    limit: int | None,
    floor: int = 0,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], bool]:
    """The matches' seqs and BM25 (the best ``limit`` of each table, or all; rowids from
    ``floor`` on; any owner's when ``owners`` is None); whether a table returned a full
    ``limit``."""
    # Field weights as the Elasticsearch backend's; the owner column only filters.
    tables = [("memories_fts", "0, 1, 0.5, 0.3, 0.5", "{text name description trigger_text}", 1.0)]
    boost = max(0.0, float(query.context_boost))
    if boost > 0.0:
        # A turn's lexical context, with its own statistics, added at ``context_boost`` (as
        # Elasticsearch's most_fields sums the fields' scores).
        tables.append(("memories_context_fts", "0, 1", "context", boost))
    scores: dict[int, float] = {}
    full = False
    for table, weights, columns, factor in tables:
        sql = f"SELECT rowid, -bm25({table}, {weights}) AS score FROM {table} WHERE {table} MATCH ?"  # noqa: S608 - fixed text
        sql += " AND rowid >= ?"
        if limit is not None:
            sql += f" ORDER BY score DESC LIMIT {int(limit)}"
        rows = conn.execute(sql, (_match_expression(terms, owners, columns), floor)).fetchall()
        full |= limit is not None and len(rows) >= limit
        for seq, score in rows:
            scores[seq] = scores.get(seq, 0.0) + factor * score
    seqs = np.fromiter(scores.keys(), dtype=np.int64, count=len(scores))
    bm25 = np.fromiter(scores.values(), dtype=np.float64, count=len(scores))
    return seqs, bm25, full


def _bounded_terms(
    conn: sqlite3.Connection, store: Store, terms: list[str], rows: int
) -> tuple[list[str], int, bool]:
    """The query's terms to search, the postings they read, and whether they were bounded
    (the module's docstring). A term's frequency is that of its tokens as FTS5 indexed them
    (the same tokenizer, stems included); in a store of ``FREQUENCY_ROWS`` or more (``rows``:
    its highest rowid) it is read again only once the store has grown ``FREQUENCY_GROWTH``
    since (FTS5 counts it by a pass over the term's posting list: ~14 ms a query at 1M)."""
    if not terms:
        return [], 0, False
    for statement in TERM_TABLES:
        conn.execute(statement)
    conn.execute("DELETE FROM temp.atlas_query")
    conn.executemany(
        "INSERT INTO temp.atlas_query (rowid, term) VALUES (?, ?)", enumerate(terms, 1)
    )
    tokens = conn.execute("SELECT doc, term FROM temp.atlas_query_tokens").fetchall()
    documents: dict[str, int] = {}
    known = store.term_frequencies if rows >= FREQUENCY_ROWS else {}
    for token in {term for _, term in tokens}:  # one lookup each (a join would scan the vocab)
        found, when = known.get(token, (0, 0))
        if when and rows <= when * (1 + FREQUENCY_GROWTH):
            documents[token] = found
            continue
        row = conn.execute(
            "SELECT doc FROM temp.atlas_index_tokens WHERE term = ?", (token,)
        ).fetchone()
        documents[token] = int(row[0]) if row else 0
        if rows >= FREQUENCY_ROWS:
            if len(known) >= FREQUENCY_TERMS:
                known.clear()
            known[token] = (documents[token], rows)
    frequency: dict[int, int] = {}
    for n, token in tokens:  # a phrase (a term of several tokens): its rarest token
        frequency[n] = min(frequency.get(n, documents[token]), documents[token])
    conn.execute("DELETE FROM temp.atlas_query")
    ranked = sorted(range(1, len(terms) + 1), key=lambda n: frequency.get(n, 0))
    if sum(frequency.values()) <= LEXICAL_FULL:
        return [terms[n - 1] for n in ranked], sum(frequency.values()), False
    kept: list[str] = []
    postings = 0
    for n in ranked:
        found = frequency.get(n, 0)
        common = found > COMMON_SHARE * rows or postings + found > LEXICAL_POSTINGS
        if kept and common:
            break
        kept.append(terms[n - 1])
        postings += found
    return kept, postings, True


def _exact_cosine(
    conn: sqlite3.Connection, candidates: list[Candidate], vector: snapshots.Vector
) -> list[Candidate]:
    """Dense candidates from an index (8-bit scores) rescored with their stored vectors (an
    archived fact's from the archive: ``memories_all``)."""
    rows = conn.execute(
        "SELECT seq, unit FROM memories_all WHERE seq IN (SELECT value FROM json_each(?))",
        (json.dumps([c.seq for c in candidates]),),
    ).fetchall()
    exact = {
        seq: (1.0 + float(np.frombuffer(unit, dtype=np.float32) @ vector)) / 2.0
        for seq, unit in rows
        if unit is not None
    }
    return [c._replace(raw=exact[c.seq]) for c in candidates if c.seq in exact]


def _match_expression(terms: list[str], owners: list[str] | None, columns: str) -> str:
    """An FTS5 query for any of ``terms`` (each quoted, so user text is never FTS5 syntax) in
    ``columns`` of the owners' documents (any owner's: None)."""
    match = f"{columns} : ({_any_of(terms)})"
    return match if owners is None else f"owner : ({_any_of(owners)}) AND {match}"


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
