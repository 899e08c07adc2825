"""Transactions hold database rows only: every memory write embeds and calls the store with no
transaction open, and writes its audit row after; a row that cannot be written takes the
store's write back. On every backend."""

from __future__ import annotations

import pytest
from django.db import connection

from memory.models import WriteIntent
from memory.services.catalog import catalog_delete, catalog_import
from memory.services.common import backend, embedder
from memory.services.intents import intent_exists
from memory.services.writes import (
    memory_forget,
    memory_turn_record,
    memory_write,
    procedure_outcome_record,
)
from memory.types import MemoryDoc
from tenants.models import AuditEvent

STORE_CALLS = ("write", "update", "delete")
MODEL_CALLS = ("embed", "embed_one", "embed_query")


@pytest.fixture
def watched(people, monkeypatch):
    """Every store and model call, with whether a transaction was open during it."""
    calls: list[tuple[str, bool]] = []

    def watch(cls, name):
        original = getattr(cls, name)

        def call(self, *args, **kwargs):
            calls.append((name, connection.in_atomic_block))
            return original(self, *args, **kwargs)

        monkeypatch.setattr(cls, name, call)

    for name in STORE_CALLS:
        watch(type(backend()), name)
    for name in MODEL_CALLS:
        watch(type(embedder()), name)
    return calls


@pytest.mark.django_db(transaction=True)
def test_writes_call_the_model_and_the_store_with_no_transaction_open(people, watched):
    alice = people.alice
    old = memory_write(user=alice, text="Sarah lives in Leeds.", memory_type="semantic")
    memory_write(
        user=alice, text="Sarah lives in York.", memory_type="semantic", supersedes=[old.id]
    )
    playbook = memory_write(
        user=alice, text="Reset the hub.", memory_type="procedural", name="hub reset"
    )
    procedure_outcome_record(user=alice, memory_id=playbook.id, success=True)
    turn = memory_turn_record(user=alice, text="Where does Sarah live?")
    memory_forget(user=alice, memory_id=turn.episode.id)
    catalog_import(tenant=people.acme, documents=[{"id": "hours", "text": "Open 9 to 5."}])
    catalog_delete(tenant=people.acme, memory_id="hours")

    assert {name for name, _ in watched} >= {"write", "update", "delete", "embed_one"}
    assert [call for call in watched if call[1]] == []
    provisioning = ("key.provision", "catalog_key.provision")  # the es-dls fixture's keys
    events = AuditEvent.objects.exclude(action__in=provisioning).order_by("id")
    actions = list(events.values_list("action", flat=True))
    assert actions == [
        "memory.write",
        "memory.supersede",
        "memory.write",
        "procedure.outcome",
        "memory.turn",
        "memory.forget",
        "catalog.import",
        "catalog.delete",
    ]


def test_a_write_whose_audit_row_fails_leaves_no_memory(people, monkeypatch):
    alice = people.alice
    old = memory_write(user=alice, text="Sarah lives in Leeds.", memory_type="semantic")
    written: list[MemoryDoc] = []
    store = type(backend())
    original = store.create

    def remember(self, docs):
        written.extend(docs)
        return original(self, docs)

    def refuse(**kwargs):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(store, "create", remember)
    monkeypatch.setattr("memory.services.writes.audit_record", refuse)

    with pytest.raises(RuntimeError):
        memory_write(
            user=alice, text="Sarah lives in York.", memory_type="semantic", supersedes=[old.id]
        )
    with pytest.raises(RuntimeError):
        memory_turn_record(user=alice, text="Where does Sarah live now?")

    assert len(written) == 2
    from memory.selectors import memory_get

    for doc in written:
        with pytest.raises(Exception, match="No memory"):
            memory_get(user=alice, memory_id=doc.id)
    assert memory_get(user=alice, memory_id=old.id).superseded_by is None
    # Taken back by the write itself: no intent is left for the reconciler.
    assert not WriteIntent.objects.filter(memory_id__in=[d.id for d in written]).exists()


@pytest.mark.django_db
def test_intent_exists_sees_an_earlier_attempts_intent_in_any_state(people):
    tenant = people.alice.tenant
    pending = WriteIntent.objects.create(
        memory_id="a" * 32, tenant=tenant, user_id_text="u", memory_type="semantic"
    )
    audited = WriteIntent.objects.create(
        memory_id="b" * 32,
        tenant=tenant,
        user_id_text="u",
        memory_type="semantic",
        state=WriteIntent.State.AUDITED,
    )

    assert intent_exists(pending.memory_id) and intent_exists(audited.memory_id)
    assert not intent_exists("c" * 32)
