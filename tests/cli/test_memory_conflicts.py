"""Memory-file conflicts are seen, not silent: named first in the next brief and in one stderr
line of the SessionStart hook, counted by ``atlas status`` while open only; a delete against an
edit is a conflict like two edits; one file's conflict never holds back the others."""

from __future__ import annotations

import json
import sqlite3

import pytest

from agents.models import MemoryFile
from memory.selectors import memory_get
from tests.cli.test_hooks import LIVE_BUDGET, event, hook
from tests.cli.test_memories import NOTE, memdir, sync

pytestmark = pytest.mark.django_db(transaction=True)


def text_of(server, path):
    row = MemoryFile.objects.get(path=path)
    return None if row.deleted else memory_get(user=server.user, memory_id=row.memory_id).text


def synced_on_both(two_machines, files):
    a, b, repo_a, repo_b = two_machines
    memdir(a, repo_a).mkdir(parents=True)
    for name, text in files.items():
        (memdir(a, repo_a) / name).write_text(text)
    sync(a, repo_a)
    sync(b, repo_b, "--pull")
    return memdir(a, repo_a), memdir(b, repo_b)


def open_conflicts(cli, repo):
    status = cli.json("status", cwd=repo, ATLAS_MEMORY_DIR=str(memdir(cli, repo)))
    return status["conflicts"]


def test_an_edit_on_both_machines_is_named_first_in_the_brief_and_on_stderr(two_machines, server):
    a, b, repo_a, repo_b = two_machines
    fa, fb = synced_on_both(two_machines, {"testing.md": NOTE, "deploys.md": "Fridays.\n"})
    (fa / "testing.md").write_text(NOTE + "A's edit\n")
    sync(a, repo_a)
    (fb / "testing.md").write_text(NOTE + "B's edit\n")
    (fb / "deploys.md").write_text("Fridays, never in December.\n")  # another file of B's

    start, _ = hook(
        b, "session-start", event("SessionStart"), repo_b, ATLAS_MEMORY_DIR=str(fb), **LIVE_BUDGET
    )

    brief = json.loads(start.stdout)["hookSpecificOutput"]["additionalContext"]
    head, found, _ = brief.partition("# Atlas brief")
    assert found and brief.startswith("## Memory-file conflicts: 1 open")
    assert "`testing.md` was changed here and on laptop-a" in head
    assert "`testing.conflict-laptop-a.md`" in head and str(fb) in head
    said = [line for line in start.stderr.splitlines() if "conflict" in line]
    assert len(said) == 1 and "testing.md" in said[0]
    assert (fb / "testing.md").read_text() == NOTE + "B's edit\n"  # nothing replaced
    assert (fb / "testing.conflict-laptop-a.md").read_text() == NOTE + "A's edit\n"
    assert text_of(server, "testing.md") == NOTE + "A's edit\n"
    assert text_of(server, "deploys.md") == "Fridays, never in December.\n"  # not held back
    assert open_conflicts(b, repo_b)["open"] == 1

    # the model (or the user) merges and deletes the conflict file: resolved, and sent
    (fb / "testing.md").write_text(NOTE + "A's edit\nB's edit\n")
    (fb / "testing.conflict-laptop-a.md").unlink()
    merged = json.loads(sync(b, repo_b).stdout)

    assert merged["pushed"] == ["testing.md"] and merged["conflicts"] == []
    assert text_of(server, "testing.md") == NOTE + "A's edit\nB's edit\n"
    assert open_conflicts(b, repo_b)["open"] == 0
    kept = [r for r in b.spool_rows() if r["state"] == "conflict"]
    assert [r["kind"] for r in kept] == ["memory_file.put"]  # kept for days, not counted
    pulled = json.loads(sync(a, repo_a, "--pull").stdout)
    assert sorted(pulled["pulled"]) == ["deploys.md", "testing.md"]
    assert (fa / "testing.md").read_text() == NOTE + "A's edit\nB's edit\n"


def test_an_edit_of_a_file_deleted_on_the_other_machine_is_a_conflict_not_a_resurrection(
    two_machines, server
):
    a, b, repo_a, repo_b = two_machines
    fa, fb = synced_on_both(two_machines, {"testing.md": NOTE})
    (fa / "testing.md").unlink()
    sync(a, repo_a)
    (fb / "testing.md").write_text(NOTE + "B's edit\n")

    done = b.run("sync-memories", "--dir", str(fb), "--pull", cwd=repo_b)

    assert done.returncode == 5 and "was deleted on laptop-a but changed here" in done.stdout
    assert MemoryFile.objects.get(path="testing.md").deleted  # not brought back
    assert (fb / "testing.md").read_text() == NOTE + "B's edit\n"
    note = (fb / "testing.conflict-laptop-a.md").read_text()
    assert "deleted on laptop-a" in note and "To keep it: delete this file" in note
    [conflict] = open_conflicts(b, repo_b)["memory_files"]
    assert conflict["kind"] == "deleted_there" and conflict["path"] == "testing.md"
    assert json.loads(sync(b, repo_b).stdout)["pushed"] == []  # still held while open

    (fb / "testing.conflict-laptop-a.md").unlink()  # keep it: on purpose now
    kept = json.loads(sync(b, repo_b).stdout)

    assert kept["pushed"] == ["testing.md"]
    assert text_of(server, "testing.md") == NOTE + "B's edit\n"
    assert open_conflicts(b, repo_b)["open"] == 0


def test_a_delete_of_a_file_edited_on_the_other_machine_is_a_conflict(two_machines, server):
    a, b, repo_a, repo_b = two_machines
    fa, fb = synced_on_both(two_machines, {"testing.md": NOTE, "other.md": "other\n"})
    (fa / "testing.md").write_text(NOTE + "A's edit\n")
    sync(a, repo_a)
    (fb / "testing.md").unlink()
    (fb / "other.md").unlink()  # a delete nobody argues with

    done = json.loads(sync(b, repo_b, "--pull").stdout)

    assert sorted(done["deleted"]) == ["other.md", "testing.md"]
    assert text_of(server, "testing.md") == NOTE + "A's edit\n"  # A's edit stands
    assert text_of(server, "other.md") is None
    assert (fb / "testing.conflict-laptop-a.md").read_text() == NOTE + "A's edit\n"
    [conflict] = open_conflicts(b, repo_b)["memory_files"]
    assert conflict["kind"] == "deleted_here"

    (fb / "testing.conflict-laptop-a.md").unlink()  # confirm the deletion, having seen it
    confirmed = json.loads(sync(b, repo_b).stdout)

    assert confirmed["deleted"] == ["testing.md"] and text_of(server, "testing.md") is None
    assert open_conflicts(b, repo_b)["open"] == 0


def test_an_older_spools_conflict_is_upgraded_and_still_open(two_machines, server):
    """A spool from before conflicts were recorded with their file: its columns are added in
    place, and the conflict file the older client wrote is taken as it is (not a second one)."""
    a, b, repo_a, repo_b = two_machines
    fa, fb = synced_on_both(two_machines, {"testing.md": NOTE})
    (fa / "testing.md").write_text(NOTE + "A's edit\n")
    sync(a, repo_a)
    (fb / "testing.md").write_text(NOTE + "B's edit\n")
    (fb / "testing.conflict-laptop-a.md").write_text(NOTE + "A's edit\n")  # the old client's
    with sqlite3.connect(b.spool_file) as db:
        db.execute("UPDATE memfiles SET conflict_hash = 'old'")
        db.execute(  # the table as the older client made it
            "CREATE TABLE old (project_key TEXT NOT NULL, path TEXT NOT NULL, base_hash TEXT, "
            "sent_hash TEXT, conflict_hash TEXT, PRIMARY KEY (project_key, path))"
        )
        db.execute(
            "INSERT INTO old SELECT project_key, path, base_hash, sent_hash, conflict_hash "
            "FROM memfiles"
        )
        db.execute("DROP TABLE memfiles")
        db.execute("ALTER TABLE old RENAME TO memfiles")

    pulled = json.loads(sync(b, repo_b, "--pull").stdout)

    assert pulled["conflicts"] == ["testing.md -> testing.conflict-laptop-a.md"]
    assert sorted(p.name for p in fb.iterdir()) == ["testing.conflict-laptop-a.md", "testing.md"]
    assert [c["kind"] for c in open_conflicts(b, repo_b)["memory_files"]] == ["edited"]
