"""The owners' dense indexes saved beside the store: a new process (here a new backend object,
with nothing cached) loads the saved index and catches it up instead of training one; a file
that is damaged or not this store's is built again; no saved file outlives a forget or an
erasure of the rows it holds."""

from __future__ import annotations

import shutil
import uuid
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from memory.engine.embedded import EmbeddedBackend
from memory.engine.embedded.ann import DenseIndex
from memory.engine.embedded.scopes import owner_key
from memory.engine.types import LegQuery, MemoryDoc, Ranking, ReadScope, RecallFilter

NOW = datetime.now(UTC)
ALICE = ReadScope(tenant_id="acme", user_id="alice")
OWNER = owner_key("acme", "alice")
DIMS = 32
MIN_ROWS = 50


def unit(rng: np.random.Generator, near: np.ndarray | None = None) -> list[float]:
    values = rng.standard_normal(DIMS) if near is None else near + 0.05 * rng.standard_normal(DIMS)
    return [float(x) for x in values / np.linalg.norm(values)]


def doc(text: str, embedding: list[float], user: str = "alice") -> MemoryDoc:
    return MemoryDoc(
        id=uuid.uuid4().hex,
        tenant_id="acme",
        user_id=user,
        memory_type="semantic",
        text=text,
        created_at=NOW,
        timestamp=NOW,
        embedding=embedding,
        last_used_at=NOW,
    )


def backend_at(path: Path) -> EmbeddedBackend:
    """A backend with nothing cached: what a new process has."""
    backend = EmbeddedBackend(path=path, dims=DIMS, ann_min_rows=MIN_ROWS)
    backend.ensure_ready()
    return backend


def nearest(backend: EmbeddedBackend, vector: np.ndarray, size: int = 5) -> list[str]:
    query = LegQuery(
        text="fact",
        vector=list(vector),
        filter=RecallFilter(),
        ranking=Ranking(apply_decay=False),
        now=NOW,
        size=size,
    )
    return [hit.id for hit in backend.recall_legs(ALICE, query).dense]


def saved_file(backend: EmbeddedBackend, owner: str = OWNER) -> Path:
    return backend._store.saved.path(owner)


def saved_seqs(backend: EmbeddedBackend) -> set[int]:
    with backend._store.transaction() as conn:
        about = backend._store.saved.about(conn, OWNER, "acme")
    index = DenseIndex.load(saved_file(backend), about, DIMS)
    assert index is not None
    return set(index.seqs().tolist())


def seq_of(backend: EmbeddedBackend, memory: MemoryDoc) -> int:
    with backend._store.transaction() as conn:
        return int(
            conn.execute("SELECT seq FROM memories WHERE id = ?", (memory.id,)).fetchone()[0]
        )


@pytest.fixture
def trainings(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many indexes were trained (k-means) from here on: one entry per training."""
    calls: list[int] = []
    train = DenseIndex.trained

    def counted(cls: type[DenseIndex], dims: int, sample: np.ndarray) -> DenseIndex:
        calls.append(len(sample))
        return train(dims, sample)

    monkeypatch.setattr(DenseIndex, "trained", classmethod(counted))
    return calls


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, np.ndarray, list[MemoryDoc]]:
    """A store where Alice has 200 facts, 5 of them near ``target``, and a saved index."""
    rng = np.random.default_rng(11)
    path = tmp_path / "memory.sqlite3"
    target = np.asarray(unit(rng))
    near = [doc(f"close fact {n}", unit(rng, target)) for n in range(5)]
    first = backend_at(path)
    first.write([doc(f"fact {n}", unit(rng)) for n in range(200)])
    first.write(near)  # the owner at revision 2
    assert set(nearest(first, target)) == {d.id for d in near}  # built, then saved
    assert saved_file(first).exists()
    return path, target, near


def test_a_new_process_loads_the_saved_index_instead_of_training_one(world, trainings):
    path, target, near = world
    assert nearest(backend_at(path), target) == nearest(backend_at(path), target)
    assert set(nearest(backend_at(path), target)) == {d.id for d in near}
    assert trainings == []


def test_a_row_written_after_the_save_is_caught_up_on_load(world, trainings):
    path, target, near = world
    rng = np.random.default_rng(12)
    closest = doc("the closest fact", [float(x) for x in target])
    backend_at(path).write([closest, doc("another fact", unit(rng))])
    loaded = backend_at(path)
    assert nearest(loaded, target, size=1) == [closest.id]
    assert set(nearest(loaded, target, size=6)) == {closest.id} | {d.id for d in near}
    assert trainings == []


def test_a_file_older_than_a_forget_is_caught_up_and_saved_again_without_the_row(
    world, trainings, tmp_path
):
    path, target, near = world
    writer = backend_at(path)
    forgotten = seq_of(writer, near[0])
    kept = shutil.copy(saved_file(writer), tmp_path / "before-the-forget")
    assert writer.delete(near[0])
    assert not saved_file(writer).exists()  # the forget took the file with it
    shutil.copy(kept, saved_file(writer))  # as if a file from before it had been left there
    loaded = backend_at(path)
    assert set(nearest(loaded, target)) == {d.id for d in near[1:]} | set(
        nearest(loaded, target)[4:]
    )
    assert near[0].id not in nearest(loaded, target, size=10)
    assert trainings == []
    assert forgotten not in saved_seqs(loaded)  # the file was written again without it


@pytest.mark.parametrize(
    "damage",
    ["truncated", "a flipped byte", "empty", "not an index", "from another store", "ahead"],
)
def test_a_saved_index_that_is_doubtful_is_built_again_with_the_same_results(
    world, trainings, damage, tmp_path
):
    path, target, near = world
    expected = nearest(backend_at(path), target)
    file = saved_file(backend_at(path))
    data = bytearray(file.read_bytes())
    if damage == "truncated":
        file.write_bytes(data[: len(data) // 2])
    elif damage == "a flipped byte":
        data[len(data) // 3] ^= 0xFF
        file.write_bytes(data)
    elif damage == "empty":
        file.write_bytes(b"")
    elif damage == "not an index":
        file.write_bytes(b"\x00" * 4096)
    elif damage == "from another store":  # the store made again at the same path
        for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
            name.unlink(missing_ok=True)
        rng = np.random.default_rng(13)
        backend_at(path).write([doc(f"new fact {n}", unit(rng)) for n in range(100)])
        file.write_bytes(data)  # the old store's file, left beside the new one
        assert not set(nearest(backend_at(path), target)) & {d.id for d in near}
        assert trainings == [100]
        return
    elif damage == "ahead":  # a store whose owner is at an older revision than the file
        with backend_at(path)._store.transaction(write=True) as conn:
            conn.execute("UPDATE owners SET rev = 1 WHERE owner = ?", (OWNER,))
            conn.execute("UPDATE memories SET rev = 1 WHERE owner = ?", (OWNER,))
    assert nearest(backend_at(path), target) == expected
    assert len(trainings) == 1


def test_a_forget_takes_the_saved_file_and_the_next_save_leaves_the_row_out(world):
    path, target, near = world
    holder = backend_at(path)
    nearest(holder, target)  # holds the loaded index
    forgotten = seq_of(holder, near[0])
    assert backend_at(path).delete(near[0])  # another process forgets it
    assert not saved_file(holder).exists()
    assert near[0].id not in nearest(holder, target)  # caught up, and saved again
    assert forgotten not in saved_seqs(holder)
    assert len(saved_seqs(holder)) == 204


def test_a_save_that_would_race_a_delete_is_not_kept(world):
    path, target, near = world
    holder = backend_at(path)
    nearest(holder, target)
    index = holder._store._indexes[OWNER]
    saved_file(holder).unlink()
    backend_at(path).delete(near[0])  # after the holder's revision
    with holder._store.transaction() as conn, index.lock:
        index.saved_purged = None  # as if due
        holder._store.saved.save(conn, OWNER, "acme", index)
    assert not saved_file(holder).exists()
    assert not list(holder._store.saved.folder.glob("*.tmp"))


def test_erasing_a_user_leaves_no_saved_index_of_theirs(world):
    path, target, _ = world
    holder = backend_at(path)
    nearest(holder, target)
    bob = backend_at(path)
    bob.write([doc(f"bob {n}", unit(np.random.default_rng(n)), user="bob") for n in range(60)])
    bob_scope = ReadScope(tenant_id="acme", user_id="bob")
    bob.recall_legs(
        bob_scope,
        LegQuery(
            text="bob",
            vector=list(target),
            filter=RecallFilter(),
            ranking=Ranking(apply_decay=False),
            now=NOW,
            size=5,
        ),
    )
    assert saved_file(bob, owner_key("acme", "bob")).exists()
    eraser = backend_at(path)
    while ids := eraser.find_ids(
        tenant_id="acme", user_id="alice", memory_type="semantic", limit=50
    ):
        eraser.delete_ids(tenant_id="acme", user_id="alice", memory_type="semantic", ids=ids)
        nearest(holder, target)  # the holder catches up between the erasure's pages
    assert nearest(holder, target) == []
    assert not list(holder._store.saved.folder.glob(f"{OWNER}.*"))
    assert saved_file(bob, owner_key("acme", "bob")).exists()  # another user's stays


def test_a_restored_store_loads_no_saved_index_of_the_store_it_came_from(
    world, trainings, tmp_path
):
    path, target, near = world
    source = backend_at(path)
    source.backup(into=tmp_path, name="drill", admin=None)
    restored = backend_at(tmp_path / "restored" / "memory.sqlite3")
    restored.ensure_ready()
    restored._store.saved.folder.mkdir()
    shutil.copy(saved_file(source), saved_file(restored))  # a file left from before the restore
    restored.restore(source=tmp_path, detail={"file": "memory.sqlite3"}, admin=None)
    assert not saved_file(restored).exists()
    shutil.copy(saved_file(source), saved_file(restored))  # copied along with the backup
    assert set(nearest(restored, target)) == {d.id for d in near}
    assert len(trainings) == 1  # not the source's file: another store
    assert nearest(source, target) == nearest(restored, target)


# --- the snapshot's small columns, saved beside the index -------------------------------------
def snapshot_file(backend: EmbeddedBackend) -> Path:
    return backend._store.saved.snapshot_path(OWNER)


def full_reads(backend: EmbeddedBackend, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The ``since`` revision of each read of the owner's rows (0: every row)."""
    store, calls = backend._store, []
    load = store._load

    def counted(conn, owner, tenant_id, rev, purged, since, **kw):
        if owner == OWNER:
            calls.append(since)
        return load(conn, owner, tenant_id, rev, purged, since, **kw)

    monkeypatch.setattr(store, "_load", counted)
    return calls


def test_a_new_process_loads_the_saved_columns_instead_of_reading_every_row(world, monkeypatch):
    path, target, _ = world
    assert snapshot_file(backend_at(path)).exists()  # saved when the rows were read whole
    expected = nearest(backend_at(path), target, size=20)
    loaded = backend_at(path)
    reads = full_reads(loaded, monkeypatch)

    assert nearest(loaded, target, size=20) == expected
    assert reads == []  # nothing read from the rows: the saved columns are current


def test_rows_written_after_the_columns_were_saved_are_merged_in(world, monkeypatch):
    path, target, _ = world
    closest = doc("the closest fact", [float(x) for x in target])
    backend_at(path).write([closest])
    loaded = backend_at(path)
    reads = full_reads(loaded, monkeypatch)

    assert nearest(loaded, target, size=6)[0] == closest.id
    assert reads and 0 not in reads  # only the rows since the save
    snapshot = loaded._store._cache.get(OWNER)
    assert snapshot is not None and len(snapshot.seqs) == 206 and snapshot.dense is not None


def test_a_delete_drops_the_saved_columns_and_the_next_process_reads_the_rows(
    world, monkeypatch, tmp_path
):
    path, target, near = world
    kept = shutil.copy(snapshot_file(backend_at(path)), tmp_path / "columns-before")
    assert backend_at(path).delete(near[0])
    assert not snapshot_file(backend_at(path)).exists()
    shutil.copy(kept, snapshot_file(backend_at(path)))  # as if left from before the forget
    loaded = backend_at(path)
    reads = full_reads(loaded, monkeypatch)

    assert near[0].id not in nearest(loaded, target, size=10)
    assert reads[0] == 0  # its deletes differ from the file's: every row read
    assert snapshot_file(loaded).exists()  # and saved again, without the forgotten row
    with loaded._store.transaction() as conn:
        again = loaded._store.saved.load_snapshot(conn, OWNER, "acme", 10**9, 1)
    assert again is not None and seq_of(loaded, near[1]) in again.seqs
    assert len(again.seqs) == 204


@pytest.mark.parametrize("damage", ["truncated", "a flipped byte", "empty", "another store's"])
def test_saved_columns_that_are_doubtful_are_read_from_the_rows(world, monkeypatch, damage):
    path, target, _ = world
    expected = nearest(backend_at(path), target, size=20)
    file = snapshot_file(backend_at(path))
    data = bytearray(file.read_bytes())
    if damage == "truncated":
        file.write_bytes(data[: len(data) // 2])
    elif damage == "a flipped byte":
        data[len(data) // 2] ^= 0xFF
        file.write_bytes(data)
    elif damage == "empty":
        file.write_bytes(b"")
    else:
        with backend_at(path)._store.transaction(write=True) as conn:
            conn.execute("UPDATE settings SET value = 'another' WHERE name = 'instance'")
    loaded = backend_at(path)
    reads = full_reads(loaded, monkeypatch)

    assert nearest(loaded, target, size=20) == expected
    assert reads[0] == 0
