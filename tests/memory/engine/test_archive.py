"""The archive of superseded facts (``MemoryBackend.archive_*``), on every backend: facts leave
the hot index (recall without superseded facts no longer ranks them), and every read that
asks for superseded facts, every delete and every erasure reaches them as before."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory.engine.types import LegQuery, Ranking, RecallFilter
from tests.memory.engine.conftest import BackendEnv, make_doc, vec

NOW = datetime.now(UTC)


def _chain(env: BackendEnv, tenant: str, user: str = "u1"):
    """An old fact superseded 40 days ago by the current one, and an unrelated current fact."""
    old = make_doc(
        tenant,
        user,
        "semantic",
        "alice lives in lisbon",
        embedding=vec(1),
        when=NOW - timedelta(days=60),
        superseded_at=NOW - timedelta(days=40),
    )
    new = make_doc(tenant, user, "semantic", "alice lives in porto", supersedes=[old.id])
    old.superseded_by = new.id
    other = make_doc(tenant, user, "semantic", "alice likes green tea", embedding=vec(2))
    env.backend.write([old, new, other])
    return old, new, other


def _legs(env: BackendEnv, tenant: str, text: str, **filters):
    query = LegQuery(
        text=text, vector=vec(1), filter=RecallFilter(**filters), ranking=Ranking(), now=NOW
    )
    found = env.backend.recall_legs(env.scope(tenant, "u1"), query)
    return {h.id for h in found.lexical}, {h.id for h in found.dense}


def test_only_facts_superseded_before_the_cutoff_move(env, tenant):
    old, new, _ = _chain(env, tenant)
    recent = make_doc(
        tenant, "u1", "semantic", "alice lived in faro", superseded_by=new.id, superseded_at=NOW
    )
    env.backend.write([recent])

    moved = env.backend.archive_superseded(
        tenant_id=tenant, user_id="u1", before=NOW - timedelta(days=30)
    )

    assert moved == [old.id]
    assert env.backend.archive_count(tenant_id=tenant, user_id="u1") == 1
    again = env.backend.archive_superseded(
        tenant_id=tenant, user_id="u1", before=NOW - timedelta(days=30)
    )
    assert again == []


def test_recall_leaves_archived_facts_out_unless_superseded_ones_are_asked_for(env, tenant):
    old, new, _ = _chain(env, tenant)
    before = _legs(env, tenant, "lisbon", include_superseded=True, include_catalog=False)
    assert old.id in before[0] and old.id in before[1]

    env.backend.archive_superseded(tenant_id=tenant, user_id="u1", before=NOW)

    credit = _legs(env, tenant, "lisbon", include_superseded=True, include_catalog=False)
    assert old.id not in credit[0] | credit[1]  # successor credit reads the hot index only
    asked = _legs(
        env, tenant, "lisbon", include_superseded=True, include_archived=True,
        include_catalog=False,
    )  # fmt: skip
    assert old.id in asked[0] and old.id in asked[1]
    assert new.id in asked[1]
    unasked = _legs(env, tenant, "lisbon", include_archived=True, include_catalog=False)
    assert old.id not in unasked[0] | unasked[1]  # never superseded facts unless asked


def test_reads_by_id_scan_and_count_reach_the_archive(env, tenant):
    old, new, other = _chain(env, tenant)
    scope = env.scope(tenant, "u1")
    all_before = [d.id for d in env.backend.scan(scope, memory_types=("semantic",))]
    counts_before = env.backend.count(scope)

    env.backend.archive_superseded(tenant_id=tenant, user_id="u1", before=NOW)

    got = env.backend.get_many(scope, [new.id, old.id, other.id])
    assert [d.id for d in got] == [new.id, old.id, other.id]
    assert got[1].superseded_by == new.id and got[1].text == "alice lives in lisbon"
    assert got[1].embedding is None
    assert [d.id for d in env.backend.scan(scope, memory_types=("semantic",))] == all_before
    only = env.backend.scan(scope, memory_types=("semantic",), only_superseded=True)
    assert [d.id for d in only] == [old.id]
    current = env.backend.scan(scope, memory_types=("semantic",), include_superseded=False)
    assert {d.id for d in current} == {new.id, other.id}
    assert env.backend.count(scope) == counts_before
    assert env.backend.tenant_memory_totals([tenant]) == {tenant: 3}
    assert sum(p.count for p in env.backend.growth(tenant, bucket="month")) == 3


def test_another_user_never_reads_an_archived_fact(env, tenant):
    old, _, _ = _chain(env, tenant)
    env.backend.archive_superseded(tenant_id=tenant, user_id="u1", before=NOW)

    bob = env.scope(tenant, "u2")
    assert env.backend.get_many(bob, [old.id]) == []
    assert env.backend.scan(bob, memory_types=("semantic",), only_superseded=True) == []
    query = LegQuery(
        text="lisbon",
        vector=vec(1),
        filter=RecallFilter(include_superseded=True, include_archived=True),
        ranking=Ranking(),
        now=NOW,
    )
    found = env.backend.recall_legs(bob, query)
    assert old.id not in {h.id for h in found.lexical + found.dense}


def test_delete_find_and_erase_reach_the_archive(env, tenant):
    old, new, other = _chain(env, tenant)
    extra = make_doc(
        tenant, "u1", "semantic", "alice lived in braga", superseded_by=new.id,
        superseded_at=NOW - timedelta(days=50),
    )  # fmt: skip
    env.backend.write([extra])
    env.backend.archive_superseded(tenant_id=tenant, user_id="u1", before=NOW)
    kwargs = {"tenant_id": tenant, "user_id": "u1", "memory_type": "semantic"}

    assert sorted(env.backend.find_ids(**kwargs)) == sorted([old.id, new.id, other.id, extra.id])
    assert env.backend.count_ids(**kwargs, among=[old.id, new.id]) == 2
    assert env.backend.delete(old) is True  # a forget of an archived fact
    assert env.backend.delete(old) is False
    assert env.backend.archive_count(tenant_id=tenant, user_id="u1") == 1

    deleted = env.backend.delete_ids(**kwargs, ids=[extra.id, other.id])

    assert sorted(deleted) == sorted([extra.id, other.id])
    assert env.backend.archive_count(tenant_id=tenant, user_id="u1") == 0
    assert env.backend.find_ids(**kwargs) == [new.id]
    hits = _legs(
        env, tenant, "braga lisbon", include_superseded=True, include_archived=True,
        include_catalog=False,
    )  # fmt: skip
    assert not ({old.id, extra.id} & (hits[0] | hits[1]))


def test_archived_facts_expire_by_when_they_were_superseded(env, tenant):
    old, new, _ = _chain(env, tenant)
    later = make_doc(
        tenant, "u1", "semantic", "alice lived in faro", superseded_by=new.id,
        superseded_at=NOW - timedelta(days=5),
    )  # fmt: skip
    env.backend.write([later])
    env.backend.archive_superseded(tenant_id=tenant, user_id="u1", before=NOW)
    assert env.backend.archive_count(tenant_id=tenant, user_id="u1") == 2

    expired = env.backend.archive_expire(
        tenant_id=tenant, user_id="u1", before=NOW - timedelta(days=30)
    )

    assert expired == [old.id]
    assert env.backend.get_many(env.scope(tenant, "u1"), [old.id, later.id])[0].id == later.id
    assert env.backend.archive_count(tenant_id=tenant, user_id="u1") == 1
