"""The backend contract, run against every backend (a behaviour that differs is a bug)."""

from __future__ import annotations

import threading
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from memory.engine.base import EngineError, signal_multiplier
from memory.engine.types import LegQuery, MemoryDoc, Ranking, RecallFilter, UsageBump
from tests.memory.engine.conftest import BackendEnv, make_doc, vec

NOW = datetime.now(UTC)


def legs(env: BackendEnv, tenant: str, user: str | None, text: str, vector=None, **filters):
    ranking = filters.pop("ranking", Ranking())
    query = LegQuery(
        text=text,
        vector=vector if vector is not None else vec(0),
        filter=RecallFilter(**filters),
        ranking=ranking,
        now=datetime.now(UTC),
    )
    return env.backend.recall_legs(env.scope(tenant, user), query)


def lexical_ids(results) -> list[str]:
    return [hit.id for hit in results.lexical]


def dense_ids(results) -> list[str]:
    return [hit.id for hit in results.dense]


def test_a_document_round_trips_with_every_field(env, tenant):
    doc = make_doc(
        tenant,
        "u1",
        "procedural",
        "Reset the Lumio Hub v2",
        confidence=0.7,
        tags=["hub", "reset"],
        metadata={"origin": {"ticket": 42}},
        name="hub reset",
        trigger="hub offline",
        steps=[{"order": 1, "instruction": "unplug", "tool": None}],
        success_count=2,
        last_success_at=NOW - timedelta(days=3),
        version=3,
        context="the turn before",
        context_ids=["t0"],
        session_inferred=True,
    )
    env.backend.write([doc])

    got = env.backend.get(env.scope(tenant, "u1"), doc.id)

    assert got is not None
    # Every field but the embedding, which reads leave out: the dense leg searches it.
    assert got.embedding is None
    assert got.to_source() == {k: v for k, v in doc.to_source().items() if k != "embedding"}
    assert dense_ids(legs(env, tenant, "u1", "", vector=doc.embedding)) == [doc.id]


def test_reads_never_leave_the_scope(env, tenant):
    other_tenant = tenant[::-1]
    mine = make_doc(tenant, "u1", "semantic", "likes tea")
    neighbour = make_doc(tenant, "u2", "semantic", "likes tea")
    catalog = make_doc(tenant, None, "catalog", "tea catalogue")
    foreign_catalog = make_doc(other_tenant, None, "catalog", "tea catalogue")
    foreign_user = make_doc(other_tenant, "u1", "semantic", "likes tea")
    env.backend.write([mine, neighbour, catalog, foreign_catalog, foreign_user])
    scope = env.scope(tenant, "u1")

    assert env.backend.get(scope, mine.id) is not None
    assert env.backend.get(scope, catalog.id) is not None
    for outside in (neighbour, foreign_catalog, foreign_user):
        assert env.backend.get(scope, outside.id) is None
    assert [d.id for d in env.backend.get_many(scope, [foreign_user.id, catalog.id, mine.id])] == [
        catalog.id,
        mine.id,
    ]
    found = legs(env, tenant, "u1", "tea")
    assert set(lexical_ids(found)) == {mine.id, catalog.id}
    assert set(dense_ids(found)) == {mine.id, catalog.id}
    catalog_only = env.scope(tenant, None)
    assert env.backend.get(catalog_only, mine.id) is None
    assert env.backend.get(catalog_only, catalog.id) is not None


def test_a_write_is_visible_to_the_very_next_read(env, tenant):
    for n in range(5):
        doc = make_doc(tenant, "u1", "semantic", f"favourite number is {n} zebra{n}")
        env.backend.write([doc])
        assert lexical_ids(legs(env, tenant, "u1", f"zebra{n}"))[:1] == [doc.id]


def test_concurrent_writers_each_see_their_write_at_once(env, tenant):
    found: dict[int, list[str]] = {}
    docs = {n: make_doc(tenant, "u1", "semantic", f"parcel code quokka{n}") for n in range(8)}
    start = threading.Barrier(len(docs))

    def write_then_read(n: int) -> None:
        start.wait()
        env.backend.write([docs[n]])
        found[n] = lexical_ids(legs(env, tenant, "u1", f"quokka{n}"))[:1]

    threads = [threading.Thread(target=write_then_read, args=(n,)) for n in docs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert found == {n: [doc.id] for n, doc in docs.items()}


def test_the_lexical_leg_finds_exact_tokens(env, tenant):
    target = make_doc(
        tenant, "u1", "episodic", "The hub shows ERR_ZB_0x1F after the update", embedding=vec(5)
    )
    noise = [
        make_doc(tenant, "u1", "episodic", f"the hub was fine on day {n}", embedding=vec(0))
        for n in range(10)
    ]
    env.backend.write([target, *noise])

    found = legs(env, tenant, "u1", "why does it say ERR_ZB_0x1F", vector=vec(0))

    assert lexical_ids(found)[0] == target.id


def test_the_lexical_leg_ignores_question_words(env, tenant):
    # The Elasticsearch analyzer's stop list keeps "what", "did", "we", "how": both backends
    # search memory.query.lexical_terms instead, so a question matches on its content words.
    chatter = make_doc(tenant, "u1", "episodic", "What did we say? How did we do it?")
    key = make_doc(tenant, "u1", "semantic", "The spare key is under the blue plant pot")
    env.backend.write([chatter, key])

    found = legs(env, tenant, "u1", "what did we do with the spare key?")

    assert lexical_ids(found) == [key.id]


def test_the_dense_leg_ranks_by_similarity(env, tenant):
    near = make_doc(tenant, "u1", "semantic", "alpha", embedding=vec(1))
    middle = make_doc(tenant, "u1", "semantic", "beta", embedding=vec(1, 2))
    far = make_doc(tenant, "u1", "semantic", "gamma", embedding=vec(3))
    env.backend.write([far, middle, near])

    found = legs(env, tenant, "u1", "unrelated words", vector=vec(1))

    assert dense_ids(found) == [near.id, middle.id, far.id]
    assert [h.rank for h in found.dense] == [1, 2, 3]
    assert found.dense[0].score > found.dense[1].score > found.dense[2].score


def test_filters_types_catalog_superseded_and_time(env, tenant):
    old = make_doc(tenant, "u1", "episodic", "paris trip", when=NOW - timedelta(days=400))
    recent = make_doc(tenant, "u1", "episodic", "paris trip again", when=NOW - timedelta(days=10))
    fact = make_doc(tenant, "u1", "semantic", "paris is home")
    archived = make_doc(
        tenant, "u1", "semantic", "paris was home", superseded_by="x", superseded_at=NOW
    )
    playbook = make_doc(tenant, "u1", "procedural", "book paris train")
    catalog = make_doc(tenant, None, "catalog", "paris guide")
    env.backend.write([old, recent, fact, archived, playbook, catalog])

    def ids(**filters):
        found = legs(env, tenant, "u1", "paris", **filters)
        assert set(lexical_ids(found)) == set(dense_ids(found))
        return set(lexical_ids(found))

    assert ids() == {old.id, recent.id, fact.id, playbook.id, catalog.id}
    assert ids(include_superseded=True) == {
        old.id,
        recent.id,
        fact.id,
        archived.id,
        playbook.id,
        catalog.id,
    }
    assert ids(memory_types=("semantic",), include_catalog=False) == {fact.id}
    assert ids(
        memory_types=("episodic",), include_catalog=False, since=NOW - timedelta(days=30)
    ) == {recent.id}
    assert ids(
        memory_types=("episodic",), include_catalog=False, until=NOW - timedelta(days=30)
    ) == {old.id}
    assert ids(memory_types=(), include_catalog=True) == {catalog.id}


def test_a_project_filter_keeps_that_projects_memories_and_the_catalog(env, tenant):
    mine = make_doc(tenant, "u1", "semantic", "deploy with blue green", project="p-atlas")
    other = make_doc(tenant, "u1", "semantic", "deploy on fridays", project="p-shop")
    general = make_doc(tenant, "u1", "semantic", "deploy notes go in the wiki")
    catalog = make_doc(tenant, None, "catalog", "deploy guide")
    env.backend.write([mine, other, general, catalog])

    def ids(**filters):
        found = legs(env, tenant, "u1", "deploy", **filters)
        assert set(lexical_ids(found)) == set(dense_ids(found))
        return set(lexical_ids(found))

    assert ids() == {mine.id, other.id, general.id, catalog.id}
    assert ids(project="p-atlas") == {mine.id, catalog.id}
    assert ids(project="p-atlas", include_unscoped=True) == {mine.id, general.id, catalog.id}
    assert ids(project="p-shop", include_catalog=False) == {other.id}
    assert ids(project="p-none", include_catalog=False) == set()


def test_ranking_signals_are_applied_inside_each_leg(env, tenant):
    same = vec(2)
    fresh = make_doc(
        tenant, "u1", "episodic", "walked the dog", embedding=same, when=NOW - timedelta(days=5)
    )
    stale = make_doc(
        tenant, "u1", "episodic", "walked the dog", embedding=same, when=NOW - timedelta(days=1500)
    )
    used = make_doc(tenant, "u1", "semantic", "dog is called rex", embedding=same, use_count=50)
    unused = make_doc(tenant, "u1", "semantic", "dog is called rex", embedding=same)
    old_playbook = make_doc(
        tenant,
        "u1",
        "procedural",
        "dog walking routine",
        embedding=same,
        when=NOW - timedelta(days=3000),
    )
    env.backend.write([fresh, stale, used, unused, old_playbook])

    found = legs(env, tenant, "u1", "walked the dog", vector=same)
    for leg in (found.lexical, found.dense):
        order = [h.id for h in leg]
        assert order.index(fresh.id) < order.index(stale.id)
        scores = {h.id: h.score for h in leg}
        ratio = scores[stale.id] / scores[fresh.id]
        expected = signal_multiplier(stale, Ranking(), NOW) / signal_multiplier(
            fresh, Ranking(), NOW
        )
        assert ratio == pytest.approx(expected, rel=0.05)

    rex = legs(env, tenant, "u1", "dog is called rex", vector=same, memory_types=("semantic",))
    for leg in (rex.lexical, rex.dense):
        assert leg[0].id == used.id
        assert leg[0].score / leg[1].score == pytest.approx(1 + 0.2 * 1.7075701760979363, rel=0.05)

    playbook = legs(
        env, tenant, "u1", "dog walking routine", vector=same, memory_types=("procedural",)
    )
    fresh_dense = {h.id: h.score for h in found.dense}[fresh.id]
    assert playbook.dense[0].score == pytest.approx(fresh_dense, rel=0.05)  # no decay at 3000 days


def test_a_catalog_document_carries_its_prior(env, tenant):
    same = vec(4)
    mine = make_doc(tenant, "u1", "procedural", "router reboot steps", embedding=same)
    shared = make_doc(tenant, None, "catalog", "router reboot steps", embedding=same)
    env.backend.write([mine, shared])

    found = legs(env, tenant, "u1", "router reboot steps", vector=same)

    for leg in (found.lexical, found.dense):
        assert [h.id for h in leg] == [mine.id, shared.id]
        assert leg[1].score / leg[0].score == pytest.approx(0.85, rel=0.05)


def test_the_decay_can_be_switched_off(env, tenant):
    same = vec(6)
    fresh = make_doc(
        tenant, "u1", "episodic", "ate ramen", embedding=same, when=NOW - timedelta(days=1)
    )
    stale = make_doc(
        tenant, "u1", "episodic", "ate ramen", embedding=same, when=NOW - timedelta(days=2000)
    )
    env.backend.write([fresh, stale])

    found = legs(env, tenant, "u1", "ate ramen", vector=same, ranking=Ranking(apply_decay=False))

    scores = {h.id: h.score for h in found.dense}
    assert scores[fresh.id] == pytest.approx(scores[stale.id], rel=0.01)


def test_update_is_atomic_under_concurrent_writers(env, tenant):
    doc = make_doc(tenant, "u1", "semantic", "counter")
    env.backend.write([doc])

    def bump() -> None:
        for _ in range(5):
            env.backend.update(doc, lambda current: {"use_count": current.use_count + 1})

    threads = [threading.Thread(target=bump) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert env.backend.get(env.scope(tenant, "u1"), doc.id).use_count == 20


def test_update_changes_only_the_returned_fields(env, tenant):
    doc = make_doc(tenant, "u1", "semantic", "lives in Bristol")
    env.backend.write([doc])

    result = env.backend.update(doc, lambda current: {"superseded_by": "new", "superseded_at": NOW})

    stored = env.backend.get(env.scope(tenant, "u1"), doc.id)
    assert stored.superseded_by == "new" and stored.text == "lives in Bristol"
    assert result.to_source() == stored.to_source()
    assert legs(env, tenant, "u1", "Bristol").lexical == []


def test_delete_removes_the_document_everywhere(env, tenant):
    doc = make_doc(tenant, "u1", "semantic", "secret plan kumquat")
    env.backend.write([doc])

    assert env.backend.delete(doc) is True
    assert env.backend.delete(doc) is False
    assert env.backend.get(env.scope(tenant, "u1"), doc.id) is None
    found = legs(env, tenant, "u1", "kumquat")
    assert found.lexical == [] and doc.id not in dense_ids(found)


def test_scan_pages_in_a_stable_order(env, tenant):
    docs = [
        make_doc(tenant, "u1", "episodic", f"turn {n}", when=NOW - timedelta(minutes=100 - n))
        for n in range(7)
    ]
    archived = make_doc(tenant, "u1", "semantic", "old", superseded_by="x")
    env.backend.write([*docs, archived, make_doc(tenant, "u2", "episodic", "not mine")])
    scope = env.scope(tenant, "u1")

    seen: list[MemoryDoc] = []
    after = None
    while page := env.backend.scan(scope, memory_types=("episodic",), search_after=after, limit=3):
        seen.extend(page)
        after = (page[-1].created_at.isoformat(), page[-1].id)

    assert [d.id for d in seen] == [d.id for d in docs]
    assert env.backend.scan(scope, memory_types=("semantic",), include_superseded=False) == []
    assert [d.id for d in env.backend.scan(scope, memory_types=("semantic",))] == [archived.id]


def test_count_per_type(env, tenant):
    env.backend.write(
        [
            make_doc(tenant, "u1", "episodic", "a"),
            make_doc(tenant, "u1", "episodic", "b"),
            make_doc(tenant, "u1", "procedural", "c"),
            make_doc(tenant, None, "catalog", "d"),
            make_doc(tenant, "u2", "semantic", "e"),
        ]
    )

    counts = env.backend.count(env.scope(tenant, "u1"))

    assert {k: v for k, v in counts.items() if v} == {"episodic": 2, "procedural": 1, "catalog": 1}


def test_record_usage_adds_counts_and_only_moves_last_used_forward(env, tenant):
    earlier, later = NOW - timedelta(days=2), NOW - timedelta(hours=1)
    a = make_doc(tenant, "u1", "semantic", "likes green tea", use_count=3, last_used_at=later)
    b = make_doc(tenant, "u1", "semantic", "owns a bicycle", last_used_at=None)
    env.backend.write([a, b])

    changed = env.backend.record_usage(
        [
            UsageBump(doc=a, count=2, last_used_at=earlier),
            UsageBump(doc=b, count=5, last_used_at=NOW),
        ]
    )
    env.backend.sync()  # usage becomes visible on the store's schedule, or now

    got = {d.id: d for d in env.backend.get_many(env.scope(tenant, "u1"), [a.id, b.id])}
    assert changed == 2
    assert (got[a.id].use_count, got[a.id].last_used_at) == (5, later)
    assert (got[b.id].use_count, got[b.id].last_used_at) == (5, NOW)
    assert got[b.id].text == "owns a bicycle"  # the rest of the document is untouched


def test_record_usage_skips_forgotten_documents(env, tenant):
    kept = make_doc(tenant, "u1", "semantic", "plays chess")
    gone = make_doc(tenant, "u1", "semantic", "plays go")
    env.backend.write([kept, gone])
    env.backend.delete(gone)

    changed = env.backend.record_usage(
        [
            UsageBump(doc=gone, count=1, last_used_at=NOW),
            UsageBump(doc=kept, count=1, last_used_at=NOW),
        ]
    )
    env.backend.sync()

    assert changed == 1
    assert env.backend.get(env.scope(tenant, "u1"), gone.id) is None
    assert env.backend.get(env.scope(tenant, "u1"), kept.id).use_count == 1


def test_record_usage_is_not_lost_under_concurrent_updates(env, tenant):
    doc = make_doc(tenant, "u1", "semantic", "counter")
    env.backend.write([doc])

    def bump() -> None:
        for _ in range(5):
            env.backend.record_usage([UsageBump(doc=doc, count=1, last_used_at=NOW)])

    def update() -> None:
        for _ in range(5):
            env.backend.update(doc, lambda current: {"use_count": current.use_count + 1})

    threads = [threading.Thread(target=f) for f in (bump, bump, update)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    env.backend.record_usage([UsageBump(doc=doc, count=1, last_used_at=NOW)])
    env.backend.sync()

    assert env.backend.get(env.scope(tenant, "u1"), doc.id).use_count == 16


def test_scan_filters_superseded_only_and_a_created_at_window(env, tenant):
    old = make_doc(tenant, "u1", "semantic", "old", created_at=NOW - timedelta(days=10))
    archived = make_doc(
        tenant, "u1", "semantic", "archived", created_at=NOW - timedelta(days=5), superseded_by="x"
    )
    recent = make_doc(tenant, "u1", "semantic", "recent", created_at=NOW - timedelta(hours=1))
    env.backend.write([old, archived, recent])
    scope = env.scope(tenant, "u1")

    def ids(**kwargs):
        return [d.id for d in env.backend.scan(scope, memory_types=("semantic",), **kwargs)]

    assert ids(only_superseded=True) == [archived.id]
    assert ids(only_superseded=True, include_superseded=False) == [archived.id]
    assert ids(created_from=NOW - timedelta(days=6)) == [archived.id, recent.id]
    assert ids(created_to=NOW - timedelta(days=6)) == [old.id]
    assert ids(created_from=NOW - timedelta(days=6), created_to=NOW, include_superseded=False) == [
        recent.id
    ]
    # Both bounds are inclusive, to the microsecond.
    assert ids(created_from=recent.created_at, created_to=recent.created_at) == [recent.id]


def test_growth_counts_a_tenant_per_type_per_calendar_bucket(env, tenant):
    monday = datetime(2026, 3, 2, tzinfo=UTC)  # a Monday; March 1st is a Sunday
    docs = [
        make_doc(tenant, "u1", "episodic", "a", created_at=monday + timedelta(hours=1)),
        make_doc(tenant, "u2", "episodic", "b", created_at=monday + timedelta(days=6, hours=23)),
        make_doc(tenant, "u1", "semantic", "c", created_at=monday + timedelta(days=7)),
        make_doc(
            tenant, "u1", "semantic", "d", created_at=monday - timedelta(days=2), superseded_by="c"
        ),
        make_doc(tenant, None, "catalog", "e", created_at=monday + timedelta(days=40)),
        make_doc(tenant[::-1], "u1", "episodic", "other tenant", created_at=monday),
    ]
    env.backend.write(docs)

    weeks = env.backend.growth(tenant, bucket="week")
    months = env.backend.growth(tenant, bucket="month")

    def day(n: int) -> datetime:
        return monday + timedelta(days=n)

    assert [(p.start, p.memory_type, p.count) for p in weeks] == [
        (day(-7), "semantic", 1),
        (day(0), "episodic", 2),
        (day(7), "semantic", 1),
        (day(35), "catalog", 1),
    ]
    assert [(p.start, p.memory_type, p.count) for p in months] == [
        (datetime(2026, 2, 1, tzinfo=UTC), "semantic", 1),
        (datetime(2026, 3, 1, tzinfo=UTC), "episodic", 2),
        (datetime(2026, 3, 1, tzinfo=UTC), "semantic", 1),
        (datetime(2026, 4, 1, tzinfo=UTC), "catalog", 1),
    ]
    assert env.backend.growth(uuid.uuid4().hex, bucket="week") == []


# --- one user's documents by id (what erasure uses) --------------------------------------------
def test_find_and_delete_ids_page_through_one_users_documents_and_nobody_elses(env, tenant):
    mine = [make_doc(tenant, "u1", "episodic", f"episode {n}") for n in range(7)]
    mine.append(make_doc(tenant, "u1", "semantic", "likes tea"))
    neighbour = make_doc(tenant, "u2", "episodic", "episode of u2")
    catalog = make_doc(tenant, None, "catalog", "opening hours")
    foreign = make_doc(tenant[::-1], "u1", "episodic", "same user id, other tenant")
    env.backend.write([*mine, neighbour, catalog, foreign])
    user = {"tenant_id": tenant, "user_id": "u1"}

    erased: list[str] = []
    while page := env.backend.find_ids(**user, memory_type="episodic", limit=3):
        assert len(page) <= 3 and page == sorted(page)
        erased += env.backend.delete_ids(**user, memory_type="episodic", ids=page)

    assert sorted(erased) == sorted(d.id for d in mine[:7])
    assert env.backend.count_ids(**user, memory_type="episodic") == 0
    assert env.backend.count_ids(**user, memory_type="semantic") == 1
    scope = env.scope(tenant, "u2")
    assert env.backend.get(scope, neighbour.id) is not None
    assert env.backend.get(scope, catalog.id) is not None
    assert env.backend.get(env.scope(tenant[::-1], "u1"), foreign.id) is not None
    assert lexical_ids(legs(env, tenant, "u1", "episode")) == []


def test_ids_among_given_ones_are_only_the_users_and_deleted_once(env, tenant):
    a, b, c = (make_doc(tenant, "u1", "semantic", f"fact {n}") for n in range(3))
    theirs = make_doc(tenant, "u2", "semantic", "fact of u2")
    env.backend.write([a, b, c, theirs])
    ids = [a.id, b.id, theirs.id, "0" * 32]
    args = {"tenant_id": tenant, "user_id": "u1", "memory_type": "semantic"}

    assert env.backend.count_ids(**args, among=ids) == 2
    assert env.backend.find_ids(**args, among=ids) == sorted([a.id, b.id])
    assert sorted(env.backend.delete_ids(**args, ids=ids)) == sorted([a.id, b.id])
    assert env.backend.delete_ids(**args, ids=ids) == []  # idempotent: nothing twice
    assert env.backend.count_ids(**args, among=ids) == 0
    assert env.backend.find_ids(**args, among=[]) == []
    assert [d.id for d in env.backend.get_many(env.scope(tenant, "u1"), [a.id, c.id])] == [c.id]
    assert env.backend.get(env.scope(tenant, "u2"), theirs.id) is not None


def test_ids_by_type_refuse_the_catalog(env, tenant):
    with pytest.raises(EngineError):
        env.backend.count_ids(tenant_id=tenant, user_id="u1", memory_type="catalog")


def test_reads_leave_the_embedding_out(env, tenant):
    doc = make_doc(tenant, "u1", "episodic", "walked along the canal")
    env.backend.write([doc])
    scope = env.scope(tenant, "u1")

    read = [
        *env.backend.get_many(scope, [doc.id]),
        *env.backend.scan(scope, memory_types=("episodic",)),
    ]

    assert [d.id for d in read] == [doc.id, doc.id]
    assert all(d.embedding is None and d.text == doc.text for d in read)


def test_stored_vectors_and_similarities_stay_inside_the_scope(env, tenant):
    mine = make_doc(tenant, "u1", "episodic", "walked along the canal", embedding=vec(3))
    catalog = make_doc(tenant, None, "catalog", "canal boats", embedding=vec(5))
    neighbour = make_doc(tenant, "u2", "episodic", "walked along the canal", embedding=vec(3))
    env.backend.write([mine, catalog, neighbour])

    got = env.backend.vectors(env.scope(tenant, "u1"), [neighbour.id, mine.id, catalog.id, "gone"])

    assert set(got) == {mine.id, catalog.id}
    assert got[mine.id] == pytest.approx(vec(3), abs=1e-6)
    assert got[catalog.id] == pytest.approx(vec(5), abs=1e-6)
    assert env.backend.vectors(env.scope(tenant, "u2"), [mine.id]) == {}

    scores = env.backend.similarities(
        env.scope(tenant, "u1"), [neighbour.id, mine.id, catalog.id, "gone"], vec(3)
    )
    assert set(scores) == {mine.id, catalog.id}
    assert scores[mine.id] == pytest.approx(1.0, abs=1e-3)
    assert scores[catalog.id] == pytest.approx(
        sum(a * b for a, b in zip(vec(3), vec(5), strict=True)), abs=1e-3
    )


# --- a turn's lexical context (MemoryDoc.context: indexed, matched below the text) -------------
def _context_legs(env: BackendEnv, tenant: str, text: str, boost: float):
    query = LegQuery(
        text=text,
        vector=vec(0),
        filter=RecallFilter(),
        ranking=Ranking(apply_decay=False),
        now=datetime.now(UTC),
        context_boost=boost,
    )
    return env.backend.recall_legs(env.scope(tenant, "u1"), query)


def test_a_turns_context_is_matched_below_its_text_and_never_returned(env, tenant):
    asked = make_doc(tenant, "u1", "episodic", "Where are you having your birthday?")
    answer = make_doc(
        tenant,
        "u1",
        "episodic",
        "Karaoke. I've booked a room at Lucky Voice",
        session_id="s1",
        context="Where are you having your birthday?",
        context_ids=[asked.id],
    )
    unrelated = make_doc(tenant, "u1", "episodic", "The boiler is broken again", session_id="s1")
    env.backend.write([asked, answer, unrelated])

    # Off (boost 0): the context is not searched at all.
    assert lexical_ids(_context_legs(env, tenant, "birthday party", 0.0)) == [asked.id]
    # On: the answer is found through its context, below the turn that says the word itself.
    assert lexical_ids(_context_legs(env, tenant, "birthday party", 0.5)) == [asked.id, answer.id]
    # The turn's own words still count in full.
    assert lexical_ids(_context_legs(env, tenant, "karaoke", 0.5)) == [answer.id]
    got = env.backend.get(env.scope(tenant, "u1"), answer.id)
    assert got is not None
    assert got.text == "Karaoke. I've booked a room at Lucky Voice"
    assert got.context == "Where are you having your birthday?"  # kept for updates, migrations


def test_the_previous_turn_is_the_sessions_newest_at_or_before(env, tenant):
    start = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
    first = make_doc(tenant, "u1", "episodic", "one", session_id="s1", when=start)
    second = make_doc(
        tenant, "u1", "episodic", "two", session_id="s1", when=start + timedelta(minutes=1)
    )
    later = make_doc(
        tenant, "u1", "episodic", "three", session_id="s1", when=start + timedelta(minutes=5)
    )
    other_session = make_doc(
        tenant, "u1", "episodic", "x", session_id="s2", when=start + timedelta(minutes=2)
    )
    other_user = make_doc(
        tenant, "u2", "episodic", "y", session_id="s1", when=start + timedelta(minutes=2)
    )
    env.backend.write([first, second, later, other_session, other_user])

    def previous(moment: datetime, session: str = "s1", user: str = "u1"):
        found = env.backend.previous_turn(
            tenant_id=tenant, user_id=user, session_id=session, before=moment
        )
        return found.id if found else None

    assert previous(start + timedelta(minutes=3)) == second.id
    assert previous(start + timedelta(minutes=1)) == second.id  # at: inclusive
    assert previous(start + timedelta(minutes=10)) == later.id
    assert previous(start - timedelta(minutes=1)) is None
    assert previous(start + timedelta(minutes=3), session="s3") is None
    assert previous(start + timedelta(minutes=3), user="u2") == other_user.id


@pytest.mark.parametrize("how", ["delete", "delete_ids"])
def test_deleting_a_turn_clears_the_context_that_holds_its_words(env, tenant, how):
    said = make_doc(tenant, "u1", "episodic", "my secret birthday plan", session_id="s1")
    holder = make_doc(
        tenant,
        "u1",
        "episodic",
        "sounds good",
        session_id="s1",
        context="my secret birthday plan",
        context_ids=[said.id],
    )
    bystander = make_doc(
        tenant,
        "u1",
        "episodic",
        "ok then",
        session_id="s1",
        context="a birthday elsewhere",
        context_ids=["another-turn"],
    )
    env.backend.write([said, holder, bystander])
    assert set(lexical_ids(_context_legs(env, tenant, "birthday", 0.5))) == {
        said.id,
        holder.id,
        bystander.id,
    }

    if how == "delete":
        assert env.backend.delete(said)
    else:
        assert env.backend.delete_ids(
            tenant_id=tenant, user_id="u1", memory_type="episodic", ids=[said.id]
        ) == [said.id]

    assert lexical_ids(_context_legs(env, tenant, "birthday", 0.5)) == [bystander.id]
    cleared = env.backend.get(env.scope(tenant, "u1"), holder.id)
    assert cleared is not None
    assert (cleared.text, cleared.context, cleared.context_ids) == ("sounds good", None, [])
    kept = env.backend.get(env.scope(tenant, "u1"), bystander.id)
    assert kept is not None and kept.context == "a birthday elsewhere"


def test_tenant_memory_totals_count_every_tenant_at_once_without_entities(env, tenant):
    other, empty = tenant[::-1], f"{tenant}-empty"
    env.backend.write(
        [
            make_doc(tenant, "u1", "episodic", "a"),
            make_doc(tenant, "u2", "semantic", "b"),
            make_doc(tenant, None, "catalog", "c"),
            make_doc(tenant, None, "entity", "another app's document"),
            make_doc(other, "u1", "episodic", "other tenant"),
        ]
    )

    totals = env.backend.tenant_memory_totals([tenant, other, empty])

    assert totals == {tenant: 3, other: 1, empty: 0}
    assert env.backend.tenant_memory_totals([]) == {}
