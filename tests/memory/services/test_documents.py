"""memory's searchable documents (``memory.services.documents``) on each backend: searched with
both legs and the tenant's decay on ``timestamp``, per user, never in memory recall or read as a
memory, deletable."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from atlas_platform.exceptions import NotFound
from memory.selectors import memory_get
from memory.services.documents import (
    searchable_count,
    searchable_delete,
    searchable_put,
    searchable_search,
)
from memory.services.recall import memory_recall
from memory.services.writes import memory_write

pytestmark = pytest.mark.services


def test_searchable_documents_are_per_user_decay_and_stay_out_of_recall(people):
    now = timezone.now()
    text = "Rotate the signing keys of the payments gateway every quarter."
    searchable_put(
        user=people.alice, doc_id="a" * 32, text=text, timestamp=now - timedelta(days=2000)
    )
    searchable_put(user=people.alice, doc_id="b" * 32, text=text, timestamp=now)
    searchable_put(user=people.bob, doc_id="c" * 32, text=text, timestamp=now)
    memory_write(user=people.alice, text="My cat is called Miso.", memory_type="semantic")

    hits = searchable_search(user=people.alice, query="signing keys payments gateway")
    assert [h.id for h in hits] == ["b" * 32, "a" * 32]  # the same text: the recent one first
    assert all(h.doc is not None and h.doc.memory_type == "entity" for h in hits)
    unread = searchable_search(user=people.alice, query="signing keys payments gateway", read=False)
    assert [(h.id, h.doc) for h in unread] == [(h.id, None) for h in hits]
    assert [h.id for h in searchable_search(user=people.bob, query="signing keys")] == ["c" * 32]
    assert searchable_search(user=people.charlie, query="signing keys") == []
    recalled = memory_recall(user=people.alice, query="signing keys payments gateway", k=10)
    assert [h.doc.memory_type for h in recalled.hits] == ["semantic"]
    with pytest.raises(NotFound):
        memory_get(user=people.alice, memory_id="b" * 32)

    assert searchable_delete(user=people.bob, doc_ids=["a" * 32]) == []  # not Bob's
    assert sorted(searchable_delete(user=people.alice, doc_ids=["a" * 32, "b" * 32])) == [
        "a" * 32,
        "b" * 32,
    ]
    assert searchable_count(user=people.alice) == 0 and searchable_count(user=people.bob) == 1


def test_a_search_among_chosen_documents_ranks_those_only(people):
    now = timezone.now()
    for n, text in enumerate(
        ["Budget review notes.", "Budget papaya papaya plans.", "Budget papaya forecast."]
    ):
        searchable_put(user=people.alice, doc_id=str(n) * 32, text=text, timestamp=now)

    everything = searchable_search(user=people.alice, query="budget papaya", read=False)
    chosen = searchable_search(
        user=people.alice, query="budget papaya", read=False, among=["0" * 32]
    )

    assert everything[-1].id == "0" * 32 and everything[-1].rank == 3
    assert [(h.id, h.rank) for h in chosen] == [("0" * 32, 1)]  # alone: first, whatever else
    assert chosen[0].score > everything[-1].score
    assert searchable_search(user=people.alice, query="budget", among=[]) == []
