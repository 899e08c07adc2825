"""What the memory engine must show, on every backend (issue: memory engine)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from atlas_platform.cluster import ApiKey
from atlas_platform.exceptions import Conflict, NotFound, ValidationError
from memory.plans import RecallPlan
from memory.selectors import memory_get, memory_history
from memory.services import bookkeeping
from memory.services.catalog import catalog_delete, catalog_import
from memory.services.common import backend
from memory.services.recall import memory_recall
from memory.services.scoping import scoped_keys, user_read_scope
from memory.services.writes import (
    memory_forget,
    memory_turn_record,
    memory_write,
    procedure_outcome_record,
)
from tenants.models import AuditEvent


def texts(result) -> list[str]:
    return [h.doc.text for h in result.hits]


def fact(user, text, **kw):
    return memory_write(user=user, text=text, memory_type="semantic", **kw)


# --- the source design's walk-through --------------------------------------------------------
def test_sarah_moves_from_bristol_to_edinburgh(people):
    alice = people.alice
    lives = fact(alice, "Sarah lives in Bristol")
    flat = fact(alice, "Sarah rents a flat in Bristol near the harbour")
    memory_turn_record(user=alice, text="I love walking along the Bristol harbour on Sundays")
    walls = fact(alice, "Victorian flats in Bristol have thick walls", fact_type="world")

    moved = fact(
        alice,
        "We left Bristol; Sarah now lives in Edinburgh",
        supersedes=[lives.id, flat.id],
        contradiction="natural",
    )

    current = memory_recall(user=alice, query="where does Sarah live?", memory_types=["semantic"])
    assert current.hits[0].doc.id == moved.id
    assert lives.id not in {h.doc.id for h in current.hits}
    assert flat.id not in {h.doc.id for h in current.hits}
    assert walls.id in {h.doc.id for h in current.hits}
    assert memory_get(user=alice, memory_id=walls.id).superseded_by is None

    everything = memory_recall(
        user=alice,
        query="where does Sarah live?",
        memory_types=["semantic"],
        include_superseded=True,
    )
    flagged = {h.doc.id: h.doc.superseded_by for h in everything.hits}
    assert flagged[lives.id] == moved.id and flagged[flat.id] == moved.id
    assert flagged[moved.id] is None

    for start in (lives.id, flat.id, moved.id):
        chain = [d.id for d in memory_history(user=alice, memory_id=start)]
        assert set(chain) == {lives.id, flat.id, moved.id} and chain[-1] == moved.id
    assert memory_get(user=alice, memory_id=moved.id).supersedes == [lives.id, flat.id]


def test_a_chain_walks_both_ways(people):
    a = fact(people.alice, "Favourite colour is red")
    b = fact(people.alice, "Favourite colour is green", supersedes=[a.id])
    c = fact(people.alice, "Favourite colour is blue", supersedes=[b.id], contradiction="harsh")

    assert [d.id for d in memory_history(user=people.alice, memory_id=a.id)] == [a.id, b.id, c.id]
    assert [d.id for d in memory_history(user=people.alice, memory_id=c.id)] == [a.id, b.id, c.id]
    assert c.confidence == pytest.approx(0.9)
    assert memory_get(user=people.alice, memory_id=b.id).superseded_by == c.id


def test_a_superseded_facts_match_counts_for_the_fact_that_replaced_it(people):
    # Only the old fact holds the question's rare word; the new one says the same thing in
    # other words. Recall gives the old fact's match to its successor and never returns it.
    old = fact(people.alice, "Sam's laptop runs Zorblax OS 3")
    new = fact(people.alice, "Sam upgraded: the machine is on version 4 now", supersedes=[old.id])
    fact(people.alice, "Sam's laptop has a cracked screen")
    fact(people.alice, "Sam's phone runs Android 14")
    question = "which Zorblax OS does the laptop run?"

    found = memory_recall(user=people.alice, query=question, k=3)
    assert found.hits[0].doc.id == new.id
    assert found.hits[0].leg_ranks["lexical"] == 1  # the old fact's lexical hit, credited
    assert old.id not in {h.doc.id for h in found.hits}

    for plain in (
        memory_recall(user=people.alice, query=question, k=3, plan=RecallPlan(succession=False)),
        # within an explicit time range the successor may lie outside it: no credit
        memory_recall(
            user=people.alice, query=question, k=3, since=datetime.now(UTC) - timedelta(days=1)
        ),
    ):
        ranks = {h.doc.id: h.leg_ranks for h in plain.hits}
        assert old.id not in ranks
        assert "lexical" not in ranks.get(new.id, {})
    # asked for the history, the old fact is itself a hit, and keeps its own match
    history = memory_recall(user=people.alice, query=question, k=3, include_superseded=True)
    assert history.hits[0].doc.id == old.id


# --- visibility and exact tokens --------------------------------------------------------------
SAME_TURN = [
    ("My gym locker code is 4417", "what is my gym locker code?"),
    ("Our wifi network is called Badger Den", "what is the wifi network called?"),
    ("The boiler was serviced by Hughes Heating", "who serviced the boiler?"),
    ("Milo the dog is allergic to chicken", "what is Milo allergic to?"),
    ("The car insurance renews every April", "when does the car insurance renew?"),
    ("Grandma's birthday dinner is at Luigi's", "where is grandma's birthday dinner?"),
    ("The spare house key is with the neighbour Ines", "who has the spare house key?"),
    ("I take the 7:42 train to work", "which train do I take to work?"),
]


def test_a_fact_written_is_recalled_in_the_same_turn_every_time(people):
    for text, question in SAME_TURN:
        written = fact(people.alice, text)
        found = memory_recall(user=people.alice, query=question, k=3)
        assert written.id in [h.doc.id for h in found.hits], text


@pytest.mark.parametrize(
    ("memory", "question"),
    [
        (
            "The Lumio Hub v2 drops off the network every night",
            "my Lumio Hub v2 keeps disconnecting",
        ),
        (
            "Thermostat showed ERR_ZB_0x1F after the firmware update",
            "it says ERR_ZB_0x1F again, what now?",
        ),
        (
            "Our stack is postgres 15.3 + pgvector 0.5.1 on Debian",
            "will this work with postgres 15.3 + pgvector 0.5.1?",
        ),
    ],
)
def test_exact_tokens_are_recalled_top_three(people, memory, question):
    distractors = [
        "The Lumio Hub v1 had a weaker antenna",
        "Thermostat showed ERR_ZB_0x2A once last year",
        "We tried postgres 14.2 with pgvector 0.4.0 before",
        "The smart plug reboots when the router restarts",
        "Network problems usually come from the mesh extender",
        "Firmware updates are installed on Tuesdays",
    ]
    for text in distractors:
        fact(people.alice, text)
    target = fact(people.alice, memory)

    turn = memory_turn_record(user=people.alice, text=question)
    lexical_only = memory_recall(
        user=people.alice, query=question, plan=RecallPlan(legs=("lexical",)), k=3
    )

    assert target.id in [h.doc.id for h in turn.recall.hits[:3]]
    assert target.id in [h.doc.id for h in lexical_only.hits]
    assert turn.episode.id not in [h.doc.id for h in turn.recall.hits]


# --- ranking signals --------------------------------------------------------------------------
def _lexical_leg(user, query):
    """The lexical leg as recall saw it: a lexical-only recall keeps its order and scores."""
    from memory.engine.types import LegHit

    hits = memory_recall(user=user, query=query, plan=RecallPlan(legs=("lexical",)), k=50).hits
    return [
        LegHit(id=h.doc.id, score=h.leg_scores["lexical"], rank=h.leg_ranks["lexical"])
        for h in hits
    ]


def test_a_lexical_leg_weighs_its_own_confidence(people):
    from memory.fusion import RRF_RANK_CONSTANT, leg_confidence

    rooms = ["hall", "porch", "study", "attic", "garage", "landing", "pantry", "cellar"]
    for room in [*rooms, "nursery", "loft", "snug", "den"]:
        fact(people.alice, f"The smart light in the {room} switches on at dusk")
    code = f"ERR_{uuid.uuid4().hex[:8].upper()}"  # in no other test's documents
    target = fact(people.alice, f"Thermostat showed {code} after the firmware update")

    # Twelve documents sharing the same two words: a flat ranking, whatever the statistics.
    flat = _lexical_leg(people.alice, "when does the smart light switch on")
    assert len(flat) >= 10
    assert leg_confidence(flat) < 0.2
    # One document holds the code: measured against the documents that did not match.
    sure = _lexical_leg(people.alice, f"what was {code}?")
    assert [h.id for h in sure] == [target.id]
    assert leg_confidence(sure) == 1.0

    def fused(weight, **asked):
        hits = memory_recall(user=people.alice, query=f"what was {code}?", **asked).hits
        hit = next(h for h in hits if h.doc.id == target.id)
        lexical, dense = hit.leg_ranks["lexical"], hit.leg_ranks["dense"]
        return hit.score, weight / (RRF_RANK_CONSTANT + lexical) + 1 / (RRF_RANK_CONSTANT + dense)

    # The leg's confidence, per query (the eval's confidence_weight ablation): 1.0 here.
    score, expected = fused(1.0, plan=RecallPlan(lexical_weight="confidence"))
    assert score == pytest.approx(expected, abs=1e-6)
    # A number fixes the weight; the product's plan weighs the lexical leg 1 (plain RRF).
    score, expected = fused(0.5, plan=RecallPlan(lexical_weight=0.5))
    assert score == pytest.approx(expected, abs=1e-6)
    score, expected = fused(1.0)
    assert score == pytest.approx(expected, abs=1e-6)


def test_an_older_episode_ranks_below_an_equal_recent_one(people):
    old = memory_turn_record(
        user=people.alice,
        text="We repainted the kitchen yellow",
        timestamp=datetime.now(UTC) - timedelta(days=900),
    ).episode
    new = memory_turn_record(
        user=people.alice,
        text="We repainted the kitchen yellow",
        timestamp=datetime.now(UTC) - timedelta(days=3),
    ).episode

    order = [h.doc.id for h in memory_recall(user=people.alice, query="kitchen paint colour").hits]
    assert order.index(new.id) < order.index(old.id)
    no_decay = memory_recall(
        user=people.alice, query="kitchen paint colour", plan=RecallPlan(decay=False)
    )
    assert {h.doc.id for h in no_decay.hits} >= {old.id, new.id}


def test_a_fact_recalled_often_outranks_an_equal_one_never_recalled(people):
    first = fact(people.alice, "Tea is taken with oat milk")
    second = fact(people.alice, "Tea is taken with oat milk")
    for _ in range(12):
        backend().update(first, lambda d: {"use_count": d.use_count + 1})

    hits = memory_recall(
        user=people.alice, query="how do I take my tea", memory_types=["semantic"]
    ).hits
    order = [h.doc.id for h in hits]
    assert order.index(first.id) < order.index(second.id)


def test_recall_bumps_use_count_off_the_hot_path(people):
    memo = fact(people.alice, "The spare key is under the blue pot")

    memory_recall(user=people.alice, query="where is the spare key?")
    bookkeeping.drain()

    stored = memory_get(user=people.alice, memory_id=memo.id)
    assert stored.use_count == 1 and stored.last_used_at >= memo.last_used_at


def test_usage_of_repeated_recalls_is_written_as_one_batch(people, monkeypatch):
    memo = fact(people.alice, "The spare key is under the blue pot")
    store = backend()
    calls = []
    original = type(store).record_usage

    def spy(self, bumps):
        calls.append({b.doc.id: b.count for b in bumps})
        return original(self, bumps)

    monkeypatch.setattr(type(store), "record_usage", spy)
    # Hold the flush lock so the background flusher's next tick cannot split the batch.
    with bookkeeping._buffer._flush_lock:
        for _ in range(3):
            memory_recall(user=people.alice, query="where is the spare key?")
    bookkeeping.drain()

    assert calls == [{memo.id: 3}]
    assert memory_get(user=people.alice, memory_id=memo.id).use_count == 3


def test_drain_makes_visible_a_batch_the_background_thread_wrote_just_before(people):
    """The flusher's thread writes a batch without making it visible; a ``drain`` that then
    finds nothing pending must still make it visible (it did not, and the test above failed
    now and then under load: the thread had taken the lock first)."""
    memo = fact(people.alice, "The spare key is under the blue pot")
    memory_recall(user=people.alice, query="where is the spare key?")

    bookkeeping._buffer.flush()  # what the background thread's tick does: no refresh
    bookkeeping.drain()

    assert memory_get(user=people.alice, memory_id=memo.id).use_count == 1


def test_recall_reads_only_the_documents_it_returns(people, monkeypatch):
    """The legs return ids; recall reads the head of the fused list (k plus a few spares) in
    one request, and a candidate forgotten in between gives way to the next."""
    alice = people.alice
    written = {
        f.id: f.text
        for f in (fact(alice, f"Sarah's bike number {n} is kept in the shed") for n in range(12))
    }
    store = backend()
    legs_of, get_many = type(store).recall_legs, type(store).get_many
    forgotten: list[str] = []
    reads: list[list[str]] = []

    def legs_then_forget_the_best(self, scope, query):
        found = legs_of(self, scope, query)
        assert found.dense
        forgotten.append(found.dense[0].id)
        memory_forget(user=alice, memory_id=found.dense[0].id)
        reads.clear()  # forgetting read it too; count recall's own reads
        return found

    def reading(self, scope, ids):
        reads.append(list(ids))
        return get_many(self, scope, ids)

    monkeypatch.setattr(type(store), "recall_legs", legs_then_forget_the_best)
    monkeypatch.setattr(type(store), "get_many", reading)
    hits = memory_recall(user=alice, query="where is Sarah's bike kept?", k=3).hits

    assert len(reads) == 1 and len(reads[0]) == 3 + 5
    assert forgotten[0] in reads[0]
    assert [h.rank for h in hits] == [1, 2, 3]
    assert forgotten[0] not in {h.doc.id for h in hits}
    assert all(h.doc.text == written[h.doc.id] for h in hits)  # whole documents


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("engine", ["embedded"], indirect=True)
def test_recall_statistics_are_written_in_batches(people, settings, django_assert_num_queries):
    from memory.models import RecallStat

    fact(people.alice, "The spare key is under the blue pot")
    counted = RecallStat.objects.filter(tenant=people.acme)
    settings.ATLAS_RECALL_STATS_FLUSH_S = 3600
    with django_assert_num_queries(0):  # the counts wait in memory: no statement per recall
        for _ in range(3):
            memory_recall(user=people.alice, query="where is the spare key?")

    assert sum(counted.values_list("count", flat=True)) == 0
    settings.ATLAS_RECALL_STATS_FLUSH_S = 0  # due: the next recall writes the whole batch
    with django_assert_num_queries(2):  # which tenants exist; one upsert for every bucket
        memory_recall(user=people.alice, query="where is the spare key?")
    assert sum(counted.values_list("count", flat=True)) == 4


@pytest.mark.parametrize("engine", ["embedded"], indirect=True)
def test_a_recall_inside_a_transaction_leaves_the_batch_pending(people, settings):
    from django.db import transaction

    from memory.models import RecallStat

    settings.ATLAS_RECALL_STATS_FLUSH_S = 0  # due at once, yet not written from in here
    with transaction.atomic():
        memory_recall(user=people.alice, query="where is the spare key?")
    assert not RecallStat.objects.filter(tenant=people.acme).exists()
    bookkeeping.drain()
    assert RecallStat.objects.get(tenant=people.acme).count == 1


@pytest.mark.parametrize("engine", ["es-dls"], indirect=True)
def test_a_kept_reader_of_a_rotated_key_is_refused_by_the_cluster(people):
    """Readers are kept per scoped key; after a rotation the new key reads, and the old key's
    kept reader fails closed (the cluster refuses it), never falling back to the writer."""
    from memory.engine.base import EngineError
    from memory.engine.elasticsearch import ElasticsearchBackend
    from tenants.services.scoped_keys import scoped_key_rotate

    memo = fact(people.alice, "The spare key is under the blue pot")
    alice = (people.acme.memory_id, people.alice.memory_id)
    scope = user_read_scope(people.alice)
    old = scoped_keys.current(*alice)
    assert backend().get_many(scope, [memo.id])  # the old key's reader, now kept

    scoped_key_rotate(user=people.alice)

    class OnlyTheOldKey:  # a provider that cannot re-read the key
        def current(self, tenant_id: str, user_id: str | None) -> ApiKey:
            return old

        reload = current

    store = backend()
    assert isinstance(store, ElasticsearchBackend)
    stale = ElasticsearchBackend(config=store.config, dims=store.dims, keys=OnlyTheOldKey())
    with pytest.raises(EngineError):
        stale.get_many(scope, [memo.id])
    # The kept key is re-read from the database once the cluster refuses it.
    assert [d.id for d in backend().get_many(scope, [memo.id])] == [memo.id]
    assert scoped_keys.current(*alice) != old


@pytest.mark.parametrize("engine", ["es-dls"], indirect=True)
def test_a_kept_scoped_key_saves_the_key_lookup_and_follows_a_rotation(
    people, django_assert_num_queries
):
    from tenants.services.scoped_keys import scoped_key_rotate

    memo = fact(people.alice, "The spare key is under the blue pot")
    alice = (people.acme.memory_id, people.alice.memory_id)
    first = scoped_keys.current(*alice)
    with django_assert_num_queries(0):  # the key row is not read again
        kept = scoped_keys.current(*alice)
    assert kept == first

    scoped_key_rotate(user=people.alice)  # in another process, say: nothing tells this cache

    found = memory_recall(user=people.alice, query="where is the spare key?")
    assert [h.doc.id for h in found.hits] == [memo.id]
    renewed, current = scoped_keys.current(*alice), people.alice.current_key()
    assert current is not None
    assert renewed.id == current.key_id


@pytest.mark.parametrize("engine", ["es-dls"], indirect=True)
def test_a_kept_key_of_a_user_left_without_one_fails_closed(people):
    from memory.errors import MemoryStoreUnavailable
    from tenants.services.scoped_keys import scoped_key_invalidate

    fact(people.alice, "The spare key is under the blue pot")
    memory_recall(user=people.alice, query="where is the spare key?")  # the key is now kept

    scoped_key_invalidate(key=people.alice.current_key())

    with pytest.raises(MemoryStoreUnavailable) as refused:
        memory_recall(user=people.alice, query="where is the spare key?")
    assert refused.value.code == "no_scoped_key"


@pytest.mark.parametrize("engine", ["es-dls"], indirect=True)
def test_without_key_caching_every_read_reads_the_key_row(
    people, settings, django_assert_num_queries
):
    settings.ATLAS_SCOPED_KEY_CACHE_S = 0
    alice = (people.acme.memory_id, people.alice.memory_id)
    scoped_keys.current(*alice)
    with django_assert_num_queries(1):
        scoped_keys.current(*alice)


def test_a_turn_recalls_with_the_vector_it_stored(people, monkeypatch):
    from memory.services.common import embedder
    from memory.services.writes import memory_turn_record

    model = embedder()
    queries = []
    monkeypatch.setattr(type(model), "embed_queries", lambda self, texts: queries.append(texts))

    memory_turn_record(user=people.alice, text="my Lumio Hub dropped wifi again")

    assert queries == []  # the stored episode's vector served the recall


def test_a_turn_is_recalled_by_the_very_next_recall(people):
    from memory.services.writes import memory_turn_record

    for n in range(4):
        turn = memory_turn_record(user=people.alice, text=f"parcel locker code is kz{n}q")
        found = memory_recall(user=people.alice, query=f"kz{n}q", k=3)
        assert [h.doc.id for h in found.hits][:1] == [turn.episode.id]


def test_procedural_memories_are_not_decayed(people):
    text = "To reset the router hold the button for ten seconds"
    ancient = timedelta(days=4000)
    playbook = memory_write(
        user=people.alice, text=text, memory_type="procedural", name="router reset"
    )
    backend().update(
        playbook,
        lambda d: {"created_at": d.created_at - ancient, "timestamp": d.timestamp - ancient},
    )
    old_episode = memory_turn_record(
        user=people.alice, text=text, timestamp=datetime.now(UTC) - ancient
    ).episode

    hits = memory_recall(
        user=people.alice, query="how do I reset the router", plan=RecallPlan(legs=("dense",))
    ).hits
    scored = {h.doc.id: h for h in hits}
    # Same words, same age: the episode decays, the playbook keeps its full score.
    assert scored[playbook.id].rank < scored[old_episode.id].rank
    aged = memory_recall(
        user=people.alice,
        query="how do I reset the router",
        plan=RecallPlan(decay=False, legs=("dense",)),
    )
    assert {h.doc.id for h in aged.hits} >= {playbook.id, old_episode.id}


def test_a_user_memory_beats_an_equally_matching_catalog_document(people):
    catalog_import(tenant=people.acme, documents=[{"text": "Returns are accepted within 30 days"}])
    mine = fact(people.alice, "Returns are accepted within 30 days")

    hits = memory_recall(user=people.alice, query="Returns are accepted within 30 days").hits
    assert hits[0].doc.id == mine.id
    assert hits[1].doc.memory_type == "catalog"


# --- procedures, forget -----------------------------------------------------------------------
def test_procedure_outcomes_count_and_refine(people):
    playbook = memory_write(
        user=people.alice,
        text="Restart the Lumio Hub",
        memory_type="procedural",
        steps=["unplug", "replug"],
    )

    procedure_outcome_record(user=people.alice, memory_id=playbook.id, success=True)
    refined = procedure_outcome_record(
        user=people.alice,
        memory_id=playbook.id,
        success=False,
        refined_steps=["unplug", "wait 30 s", "replug"],
    )

    assert (refined.success_count, refined.failure_count, refined.version) == (1, 1, 2)
    assert [s["instruction"] for s in refined.steps] == ["unplug", "wait 30 s", "replug"]
    assert refined.last_success_at is not None


def test_forget_really_deletes_and_leaves_a_content_free_tombstone(people):
    secret = fact(people.alice, "My bank PIN hint is the cat's birthday")

    memory_forget(user=people.alice, memory_id=secret.id)

    with pytest.raises(NotFound):
        memory_get(user=people.alice, memory_id=secret.id)
    assert secret.id not in [
        h.doc.id
        for h in memory_recall(
            user=people.alice, query="bank PIN hint", include_superseded=True
        ).hits
    ]
    tombstone = AuditEvent.objects.get(action="memory.forget")
    assert tombstone.metadata == {"memory_id": secret.id, "memory_type": "semantic"}
    for event in AuditEvent.objects.all():
        assert "PIN" not in str(event.metadata) and "birthday" not in str(event.metadata)


def test_every_memory_service_leaves_one_audit_event(people):
    def events():
        return list(
            AuditEvent.objects.filter(action__startswith="memory").values_list("action", flat=True)
        )

    base = len(events())
    a = fact(people.alice, "likes jazz")
    fact(people.alice, "likes blues now", supersedes=[a.id])
    memory_turn_record(user=people.alice, text="play something")
    assert len(events()) == base + 3


# --- isolation --------------------------------------------------------------------------------
def test_no_service_reaches_another_users_or_tenants_memory(people):
    catalog_import(tenant=people.globex, documents=[{"text": "Globex secret pricing sheet"}])
    theirs = {
        "bob": fact(people.bob, "Bob's secret pricing note"),
        "charlie": fact(people.charlie, "Charlie's secret pricing note"),
    }
    mine = fact(people.alice, "Alice's pricing note")

    found = memory_recall(
        user=people.alice, query="secret pricing note sheet", include_superseded=True, k=20
    )
    assert {h.doc.id for h in found.hits} == {mine.id}
    for doc in theirs.values():
        with pytest.raises(NotFound):
            memory_get(user=people.alice, memory_id=doc.id)
        with pytest.raises(NotFound):
            memory_history(user=people.alice, memory_id=doc.id)
        with pytest.raises(NotFound):
            fact(people.alice, "taking over", supersedes=[doc.id])
        with pytest.raises(NotFound):
            memory_forget(user=people.alice, memory_id=doc.id)
        with pytest.raises(NotFound):
            procedure_outcome_record(user=people.alice, memory_id=doc.id, success=True)
        assert (
            memory_get(
                user=people.bob if doc is theirs["bob"] else people.charlie, memory_id=doc.id
            ).superseded_by
            is None
        )
    with pytest.raises(NotFound):
        memory_get(user=people.alice, memory_id=uuid.uuid4().hex)


def test_catalog_documents_stay_in_their_tenant(people):
    written = catalog_import(
        tenant=people.acme, documents=[{"id": "faq-1", "text": "Opening hours are 9 to 5"}]
    )

    assert [
        h.doc.id for h in memory_recall(user=people.bob, query="opening hours").hits
    ] == written.written
    assert memory_recall(user=people.charlie, query="opening hours").hits == []
    with pytest.raises(NotFound):
        catalog_delete(tenant=people.globex, memory_id="faq-1")
    with pytest.raises(NotFound):
        catalog_delete(tenant=people.globex, memory_id=written.written[0])
    with pytest.raises(NotFound):
        memory_forget(user=people.alice, memory_id=written.written[0])
    replaced = catalog_import(
        tenant=people.acme, documents=[{"text": "Opening hours are 8 to 6"}], replace=True
    )
    assert replaced.removed == 1
    assert [h.doc.text for h in memory_recall(user=people.bob, query="opening hours").hits] == [
        "Opening hours are 8 to 6"
    ]


# --- bad input --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"text": ""}, ValidationError),
        ({"text": "   "}, ValidationError),
        ({"text": "x" * 9000}, ValidationError),
        ({"memory_type": "episodic"}, ValidationError),
        ({"memory_type": "dream"}, ValidationError),
        ({"confidence": 1.5}, ValidationError),
        ({"contradiction": "harsh"}, ValidationError),
        ({"supersedes": ["nope"]}, NotFound),
    ],
)
def test_bad_writes_are_refused_and_nothing_is_written(people, kwargs, error):
    args = {"user": people.alice, "text": "valid text", "memory_type": "semantic", **kwargs}

    with pytest.raises(error):
        memory_write(**args)

    assert backend().count(user_read_scope(people.alice)).get("semantic", 0) == 0
    assert not AuditEvent.objects.filter(action__startswith="memory").exists()


def test_superseding_twice_is_a_conflict(people):
    old = fact(people.alice, "Cat is called Tom")
    fact(people.alice, "Cat is called Tim", supersedes=[old.id])

    with pytest.raises(Conflict):
        fact(people.alice, "Cat is called Tam", supersedes=[old.id])


@pytest.mark.parametrize("k", [0, 51, -3])
def test_k_out_of_range_is_refused(people, k):
    with pytest.raises(ValidationError):
        memory_recall(user=people.alice, query="anything", k=k)


def test_unknown_types_in_recall_are_refused(people):
    with pytest.raises(ValidationError):
        memory_recall(user=people.alice, query="anything", memory_types=["semantic", "dreams"])


def test_a_superseding_write_needs_ids_and_flags_the_old_fact(people):
    old = fact(people.alice, "Works at Initech")
    supersede = {"user": people.alice, "text": "Works at Globex", "memory_type": "semantic"}

    with pytest.raises(ValidationError):  # a contradiction names what it supersedes
        memory_write(**supersede, contradiction="natural")
    new = memory_write(**supersede, supersedes=[old.id], contradiction="natural")

    assert memory_get(user=people.alice, memory_id=old.id).superseded_by == new.id
    assert new.contradiction == "natural" and new.supersedes == [old.id]


def test_the_catalog_import_command_loads_a_file(people, tmp_path):
    from django.core.management import call_command

    source = tmp_path / "faq.jsonl"
    source.write_text('{"id": "faq-9", "text": "Parcels ship on weekdays"}\n\n')

    call_command("catalog_import", str(source), tenant="acme")

    hits = memory_recall(user=people.alice, query="when do parcels ship").hits
    assert [h.doc.id for h in hits] == [f"catalog.{people.acme.pk}.faq-9"]


def test_a_tenant_cannot_overwrite_another_tenants_catalog_or_a_users_memory(people):
    acme = catalog_import(tenant=people.acme, documents=[{"id": "faq-1", "text": "Acme hours 9-5"}])
    mine = fact(people.alice, "Alice keeps bees")

    catalog_import(tenant=people.globex, documents=[{"id": "faq-1", "text": "Globex hours 8-4"}])
    catalog_import(tenant=people.globex, documents=[{"id": acme.written[0], "text": "hijack"}])
    with pytest.raises(ValidationError):
        catalog_import(tenant=people.globex, documents=[{"id": "a b/c", "text": "bad key"}])
    catalog_import(tenant=people.globex, documents=[{"id": mine.id, "text": "hijack"}])

    assert memory_get(user=people.alice, memory_id=acme.written[0]).text == "Acme hours 9-5"
    assert memory_get(user=people.alice, memory_id=mine.id).text == "Alice keeps bees"
    # The would-be hijacks landed in Globex's own namespace, nowhere else.
    assert {h.doc.text for h in memory_recall(user=people.charlie, query="hours").hits} == {
        "Globex hours 8-4",
        "hijack",
    }
    assert "hijack" not in {
        h.doc.text for h in memory_recall(user=people.alice, query="hours").hits
    }
