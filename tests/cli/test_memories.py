"""Memory files across machines: keyed by project and relative path, bodies intact, edits as
superseding versions, deletes as forgets, and a conflict file when two machines edited the same
file (nothing overwritten)."""

from __future__ import annotations

import hashlib
import json

import pytest

from agents.models import MemoryFile, Project
from agents.services.projects import project_key
from atlas_platform.exceptions import NotFound
from memory.selectors import memory_get, memory_history
from tests.cli.conftest import free_port, git_repo, make_cli

pytestmark = pytest.mark.django_db(transaction=True)

NOTE = (
    "---\nname: testing\ndescription: how we test\ntype: project\n---\n"
    "# Testing\n\nRun `make test` before every push.\n"
)


def memdir(cli, repo):
    return cli.home / "mem" / repo.name


def sync(cli, repo, *extra, **env):
    return cli.run(
        "sync-memories", "--dir", str(memdir(cli, repo)), "--json", *extra, cwd=repo, **env
    )


def test_the_same_repository_at_two_paths_is_one_project(two_machines, server):
    a, b, repo_a, repo_b = two_machines

    key_a = a.json("status", cwd=repo_a)["project"]["key"]
    key_b = b.json("status", cwd=repo_b)["project"]["key"]
    a.run("remember", "one", cwd=repo_a)
    b.run("remember", "two", cwd=repo_b)

    assert key_a == key_b == project_key(remote="git@github.com:Acme/Shop.git")[0]
    assert Project.objects.filter(user=server.user).count() == 1


def test_a_file_pushed_on_one_machine_is_pulled_on_the_other_with_its_body(two_machines, server):
    a, b, repo_a, repo_b = two_machines
    memdir(a, repo_a).mkdir(parents=True)
    (memdir(a, repo_a) / "testing.md").write_text(NOTE)
    (memdir(a, repo_a) / "topics").mkdir()
    (memdir(a, repo_a) / "topics" / "db.md").write_text("Postgres 16, one schema per tenant.\n")

    pushed = json.loads(sync(a, repo_a).stdout)
    pulled = json.loads(sync(b, repo_b, "--pull").stdout)

    assert sorted(pushed["pushed"]) == ["testing.md", "topics/db.md"]
    assert sorted(pulled["pulled"]) == ["testing.md", "topics/db.md"]
    assert (memdir(b, repo_b) / "testing.md").read_text() == NOTE  # front matter and body
    row = MemoryFile.objects.get(path="testing.md")
    doc = memory_get(user=server.user, memory_id=row.memory_id)
    assert doc.text == NOTE and doc.metadata["front_matter"]["name"] == "testing"


def test_an_edit_supersedes_and_a_delete_forgets(two_machines, server):
    a, _, repo_a, _ = two_machines
    folder = memdir(a, repo_a)
    folder.mkdir(parents=True)
    (folder / "testing.md").write_text(NOTE)
    sync(a, repo_a)
    first = MemoryFile.objects.get().memory_id

    (folder / "testing.md").write_text(NOTE + "\nAlso run the browser tests.\n")
    sync(a, repo_a)
    row = MemoryFile.objects.get()
    chain = [m.id for m in memory_history(user=server.user, memory_id=first)]
    (folder / "testing.md").unlink()
    sync(a, repo_a)
    gone = MemoryFile.objects.get()

    assert row.version == 2 and chain == [first, row.memory_id]
    assert gone.deleted and gone.memory_id == ""
    with pytest.raises(NotFound):
        memory_get(user=server.user, memory_id=row.memory_id)


def test_two_projects_testing_md_never_collide(atlas_bin, tmp_path, server):
    a = make_cli(atlas_bin, tmp_path, server, "laptop-a")
    one = git_repo(tmp_path / "one", "git@github.com:acme/one.git")
    two = git_repo(tmp_path / "two", "git@github.com:acme/two.git")
    for repo, text in ((one, "one's notes\n"), (two, "two's notes\n")):
        memdir(a, repo).mkdir(parents=True)
        (memdir(a, repo) / "testing.md").write_text(text)
        sync(a, repo)

    assert MemoryFile.objects.filter(path="testing.md").count() == 2
    hashes = set(MemoryFile.objects.values_list("content_hash", flat=True))
    assert hashes == {
        hashlib.sha256(t.encode()).hexdigest() for t in ("one's notes\n", "two's notes\n")
    }


def test_two_machines_editing_the_same_file_offline_get_a_conflict_file(two_machines, server):
    a, b, repo_a, repo_b = two_machines
    memdir(a, repo_a).mkdir(parents=True)
    (memdir(a, repo_a) / "testing.md").write_text(NOTE)
    sync(a, repo_a)
    sync(b, repo_b, "--pull")
    closed = f"http://127.0.0.1:{free_port()}"
    (memdir(a, repo_a) / "testing.md").write_text(NOTE + "A's edit\n")
    (memdir(b, repo_b) / "testing.md").write_text(NOTE + "B's edit\n")
    offline_a = sync(a, repo_a, ATLAS_URL=closed)
    offline_b = sync(b, repo_b, ATLAS_URL=closed)

    sync(a, repo_a)  # A comes back first: its edit is the server's version
    back_b = b.run("sync-memories", "--dir", str(memdir(b, repo_b)), "--pull", cwd=repo_b)

    assert offline_a.returncode == 0 and offline_b.returncode == 0  # spooled, not failed
    assert back_b.returncode == 5 and "conflict" in back_b.stdout
    assert (memdir(b, repo_b) / "testing.md").read_text() == NOTE + "B's edit\n"  # untouched
    conflict = memdir(b, repo_b) / "testing.conflict-laptop-a.md"
    assert conflict.read_text() == NOTE + "A's edit\n"
    row = MemoryFile.objects.get()
    assert memory_get(user=server.user, memory_id=row.memory_id).text == NOTE + "A's edit\n"

    # B merges by hand and removes the conflict file: its next push is based on A's version
    (memdir(b, repo_b) / "testing.md").write_text(NOTE + "A's edit\nB's edit\n")
    conflict.unlink()
    merged = sync(b, repo_b)
    assert json.loads(merged.stdout)["pushed"] == ["testing.md"]
    row.refresh_from_db()
    assert (
        memory_get(user=server.user, memory_id=row.memory_id).text == NOTE + "A's edit\nB's edit\n"
    )


def test_pull_while_offline_spools_the_push_skips_the_pull_and_exits_0(two_machines, server):
    """A sync with --pull is a write (the push) and a read (the pull): offline, the push is
    spooled and the pull is reported skipped; nothing fails, and the next sync delivers."""
    a, _, repo_a, _ = two_machines
    memdir(a, repo_a).mkdir(parents=True)
    (memdir(a, repo_a) / "testing.md").write_text(NOTE)
    closed = f"http://127.0.0.1:{free_port()}"

    offline = sync(a, repo_a, "--pull", ATLAS_URL=closed)

    assert offline.returncode == 0, offline.stderr
    report = json.loads(offline.stdout)
    assert report["pull_skipped"].startswith("offline:")
    assert "pull skipped" in offline.stderr
    assert not MemoryFile.objects.exists()  # spooled, not sent
    online = sync(a, repo_a, "--pull")
    assert online.returncode == 0 and json.loads(online.stdout)["pull_skipped"] == ""
    assert MemoryFile.objects.get().path == "testing.md"
