"""A tenant made on the embedded default moves to Elasticsearch: ``memory_migrate`` copies its
memories (every user's, superseded facts and the catalog too), verifies each is found, provisions
the scoped keys and switches the tenant to ``dls``; a second run resumes without duplicates."""

from __future__ import annotations

from datetime import UTC, datetime
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memory.selectors import memory_export
from memory.services import bookkeeping
from memory.services.catalog import catalog_import
from memory.services.documents import searchable_count, searchable_put, searchable_search
from memory.services.recall import memory_recall
from memory.services.writes import memory_turn_record, memory_write
from tenants.models import AuditEvent, ScopedKey, Tenant, User


@pytest.fixture
def embedded_tenant(settings: Any, tmp_path: Path, db: None) -> dict[str, Any]:
    """Tenant Acme on the embedded store (mode filter, no keys), with memories of both users."""
    settings.ATLAS_MEMORY_BACKEND = "embedded"
    settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")
    acme = Tenant.objects.create(slug="acme", name="Acme")
    alice = User.objects.create(tenant=acme, external_id="alice")
    bob = User.objects.create(tenant=acme, external_id="bob")
    old = memory_write(user=alice, text="Alice lives in Lyon", memory_type="semantic")
    memory_write(
        user=alice, text="Alice lives in Nantes", memory_type="semantic", supersedes=[old.id]
    )
    memory_turn_record(user=alice, text="My dog Pixel chews cables")
    memory_write(
        user=alice,
        text="Restart the router",
        memory_type="procedural",
        name="router",
        steps=[{"instruction": "Unplug it"}],
    )
    for n in range(230):  # more than one page of the copy
        memory_write(user=bob, text=f"Bob's note number {n}", memory_type="semantic")
    catalog_import(tenant=acme, documents=[{"id": "hours", "text": "Open 9 to 5"}])
    searchable_put(  # another app's searchable document (the knowledge graph's entity)
        user=alice,
        doc_id="entity-pixel",
        text="Pixel: Alice's dog, a beagle",
        timestamp=datetime(2026, 1, 5, tzinfo=UTC),
        title="Pixel",
    )
    bookkeeping.drain()
    ids = {u.external_id: sorted(d.id for d in memory_export(user=u)) for u in (alice, bob)}
    return {
        "tenant": acme,
        "alice": alice,
        "bob": bob,
        "ids": ids,
        "path": tmp_path / "memory.sqlite3",
    }


def migrate(path: Path, *extra: str) -> str:
    out = StringIO()
    call_command("memory_migrate", "acme", "--from", str(path), *extra, stdout=out)
    return out.getvalue()


def test_every_memory_is_found_afterwards_and_the_mode_is_dls(
    embedded_tenant: dict[str, Any], es: Any, settings: Any
) -> None:
    settings.ATLAS_MEMORY_BACKEND = "elasticsearch"
    acme, alice, bob = (embedded_tenant[k] for k in ("tenant", "alice", "bob"))

    output = migrate(embedded_tenant["path"])

    acme.refresh_from_db()
    alice.refresh_from_db()
    bob.refresh_from_db()
    assert acme.isolation_mode == "dls", output
    assert "verified: every memory found" in output
    assert ScopedKey.objects.filter(user__tenant=acme, status="active").count() == 2
    for user in (alice, bob):  # read back as the user, with their scoped key
        assert (
            sorted(d.id for d in memory_export(user=user))
            == embedded_tenant["ids"][user.external_id]
        )
    assert len(embedded_tenant["ids"]["bob"]) == 230
    hits = memory_recall(user=alice, query="where does Alice live?", k=3).hits
    assert hits[0].doc.text == "Alice lives in Nantes"
    assert [h.id for h in searchable_search(user=alice, query="beagle")] == ["entity-pixel"]
    assert searchable_count(user=alice) == 1
    catalog = memory_recall(user=bob, query="opening hours", k=50).hits
    assert any(h.doc.memory_type == "catalog" for h in catalog)
    assert not any(h.doc.user_id == alice.memory_id for h in catalog)  # still per user
    event = AuditEvent.objects.get(action="tenant.backend_migrate")
    assert event.metadata["copied"]["semantic"] == 232 and event.metadata["mode"] == "dls"
    assert event.metadata["copied"]["entity"] == 1
    assert AuditEvent.objects.filter(action="tenant.isolation").count() == 1


def test_a_second_run_resumes_without_copying_again(
    embedded_tenant: dict[str, Any], es: Any, settings: Any
) -> None:
    settings.ATLAS_MEMORY_BACKEND = "elasticsearch"
    migrate(embedded_tenant["path"], "--keep-mode")
    assert Tenant.objects.get(slug="acme").isolation_mode == "filter"  # --keep-mode

    again = migrate(embedded_tenant["path"])

    assert "alice: complete already" in again and "bob: complete already" in again
    assert "copied: episodic 0, semantic 0, procedural 0, catalog 0, entity 0" in again
    assert Tenant.objects.get(slug="acme").isolation_mode == "dls"
    bob = embedded_tenant["bob"]
    bob.refresh_from_db()
    assert len(list(memory_export(user=bob))) == 230  # no duplicates


def test_it_refuses_while_atlas_runs_on_the_embedded_store(
    embedded_tenant: dict[str, Any],
) -> None:
    with pytest.raises(CommandError, match="not running on Elasticsearch"):
        migrate(embedded_tenant["path"])
    assert Tenant.objects.get(slug="acme").isolation_mode == "filter"


def test_a_missing_source_file_is_refused(
    embedded_tenant: dict[str, Any], es: Any, settings: Any, tmp_path: Path
) -> None:
    settings.ATLAS_MEMORY_BACKEND = "elasticsearch"

    with pytest.raises(CommandError, match="No embedded store"):
        migrate(tmp_path / "nope.sqlite3")
    assert Tenant.objects.get(slug="acme").isolation_mode == "filter"
