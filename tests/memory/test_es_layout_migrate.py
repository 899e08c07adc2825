"""``manage.py es_layout_migrate``: a deployment on the per-type indices (the layout before
2026-11-30) moves into the shared index without losing or overwriting a document."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from elasticsearch import Elasticsearch

from memory.engine.elasticsearch import ElasticsearchBackend, _load_template
from memory.engine.types import PERSONAL_TYPES, MemoryDoc, ReadScope
from memory.services.common import backend, embedder
from memory.services.recall import memory_recall

pytestmark = pytest.mark.django_db


def _doc(tenant_id: str, user_id: str | None, kind: str, text: str) -> MemoryDoc:
    moment = datetime(2026, 6, 1, tzinfo=UTC)
    return MemoryDoc(
        id=uuid.uuid4().hex,
        tenant_id=tenant_id,
        user_id=user_id,
        memory_type=kind,  # type: ignore[arg-type]
        text=text,
        created_at=moment,
        timestamp=moment,
        embedding=[float(x) for x in embedder().embed([text])[0]],
        name=text if kind in ("procedural", "catalog") else None,
    )


def test_per_type_indices_move_into_the_shared_index(es, settings, acme, alice):
    settings.ATLAS_MEMORY_BACKEND = "elasticsearch"
    prefix = settings.ATLAS_ES_INDEX_PREFIX = f"{es.index_prefix}-old{uuid.uuid4().hex[:6]}"
    client = Elasticsearch(es.url, basic_auth=(es.username, es.password))
    shared = _load_template("memory-component.json", prefix, embedder().dims)["template"]
    tenant, user = str(acme.pk), str(alice.pk)
    old: dict[str, list[MemoryDoc]] = {
        "episodic": [
            _doc(tenant, user, "episodic", f"we repainted the hall {n}") for n in range(7)
        ],
        "semantic": [_doc(tenant, user, "semantic", "Sarah's bike lives in the blue shed")],
        "procedural": [_doc(tenant, user, "procedural", "reset the Lumio hub")],
        "catalog": [_doc(tenant, None, "catalog", "Lumio hub opening hours")],
    }
    for kind, docs in old.items():  # what the old layout held: one index per type
        index = f"{prefix}-{kind}"
        client.indices.create(index=index, settings=shared["settings"], mappings=shared["mappings"])
        for doc in docs:
            routing = doc.user_id or f"tenant:{doc.tenant_id}"
            client.index(index=index, id=doc.id, routing=routing, document=doc.to_source())
        client.indices.refresh(index=index)
    every = [d for docs in old.values() for d in docs]
    scope = ReadScope(tenant_id=tenant, user_id=user, isolation="filter")
    # Written since the upgrade, then found in the old index too: the newer one is kept.
    newer = old["semantic"][0]
    store = backend()
    assert isinstance(store, ElasticsearchBackend)
    store.write([_with_text(newer, "Sarah's bike lives in the green shed now")])

    assert store.old_layout_indices() == sorted(f"{prefix}-{kind}" for kind in old)
    out = StringIO()
    call_command("es_layout_migrate", stdout=out)

    assert f"{prefix}-episodic: 7 documents in the shared index (7 copied now)" in out.getvalue()
    assert "(0 copied now)" in out.getvalue()  # the semantic fact was there already
    read = {d.id: d for d in store.get_many(scope, [d.id for d in every])}
    assert set(read) == {d.id for d in every}
    assert read[newer.id].text == "Sarah's bike lives in the green shed now"
    assert all(client.indices.exists(index=f"{prefix}-{kind}") for kind in old)  # kept
    hits = memory_recall(
        user=alice, query="where is Sarah's bike?", memory_types=["semantic"], include_catalog=False
    )
    assert [h.doc.id for h in hits.hits] == [newer.id]

    again = StringIO()
    call_command("es_layout_migrate", "--delete-old", stdout=again)

    assert again.getvalue().count("(0 copied now); old index deleted") == len(old)
    assert not any(client.indices.exists(index=f"{prefix}-{kind}") for kind in old)
    assert len(store.get_many(scope, [d.id for d in every])) == len(every)
    counts = store.count(scope)
    assert {t: counts[t] for t in PERSONAL_TYPES} == {"episodic": 7, "semantic": 1, "procedural": 1}
    call_command("es_layout_migrate", stdout=(last := StringIO()))
    assert "nothing to migrate" in last.getvalue()
    assert store.old_layout_indices() == []


def test_a_process_starting_on_the_old_layout_says_what_to_run(es, settings, caplog):
    prefix = settings.ATLAS_ES_INDEX_PREFIX = f"{es.index_prefix}-old{uuid.uuid4().hex[:6]}"
    client = Elasticsearch(es.url, basic_auth=(es.username, es.password))
    client.indices.create(index=f"{prefix}-semantic")
    config = dataclasses.replace(es, index_prefix=prefix)

    with caplog.at_level("WARNING", logger="memory.engine.elasticsearch"):
        ElasticsearchBackend(config=config, dims=embedder().dims).ensure_ready()

    assert f"per-type indices {prefix}-semantic" in caplog.text
    assert "manage.py es_layout_migrate" in caplog.text


def test_the_embedded_backend_has_nothing_to_migrate(settings, tmp_path):
    settings.ATLAS_MEMORY_BACKEND = "embedded"
    settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")
    with pytest.raises(CommandError, match="not Elasticsearch"):
        call_command("es_layout_migrate", stdout=StringIO())


def _with_text(doc: MemoryDoc, text: str) -> Any:
    return dataclasses.replace(doc, text=text, version=doc.version + 1)
