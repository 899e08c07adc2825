"""Nothing the developer marks private leaves the machine: ``<private>`` spans are removed from
everything sent (watched on the wire, through a proxy), files ``.atlasignore`` matches are never
sent, README.md and the like are not notes by default; and a pull writes only inside the memory
folder, never through a link, never at a path the server should not have held."""

from __future__ import annotations

import json

import pytest
from django.apps import apps

from agents.models import MemoryFile, Project
from knowledge.models import Entity
from memory.selectors import memory_get
from memory.services.writes import memory_write
from tests.cli.test_hooks import event, hook
from tests.cli.test_memories import memdir, sync

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "hunter2-zanzibar"
PRIVATE = f"<private>the staging password is {SECRET}</private>"


def test_private_spans_never_go_over_the_wire_from_any_command_or_hook(
    cli, server, proxy, tmp_path
):
    repo = tmp_path / "shop"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text('[remote "origin"]\n\turl = git@github.com:acme/shop\n')
    via = {"ATLAS_URL": proxy.url}
    folder = memdir(cli, repo)
    folder.mkdir(parents=True)
    (folder / "staging.md").write_text(f"# Staging\n\nDeploy with make stage.\n{PRIVATE}\n")
    (repo / "docs").mkdir()
    (repo / "docs" / "runbook.md").write_text(f"# Runbook\n\nRestart the worker.\n{PRIVATE}\n")
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(json.dumps({"message": {"role": "user", "content": PRIVATE}}) + "\n")

    remembered = cli.json("remember", f"Staging lives on host st-1. {PRIVATE}", cwd=repo, **via)
    sync(cli, repo, **via)
    note = {"file_path": str(repo / "docs" / "runbook.md")}
    hook(cli, "post-tool-use", event("PostToolUse", tool_input=note), repo, **via)
    hook(cli, "pre-compact", event("PreCompact", transcript_path=str(transcript)), repo, **via)
    hook(cli, "user-prompt-submit", event("UserPromptSubmit", prompt=PRIVATE), repo, **via)
    cli.run("recall", f"staging {PRIVATE}", cwd=repo, **via)
    cli.json("sync", cwd=repo, **via)

    wire = b"".join(proxy.seen)
    lines = [r.split(b"\r\n")[0] for r in proxy.seen]
    assert lines.count(b"POST /api/v1/users/alice/recall HTTP/1.1") == 1  # a prompt all private
    assert len(lines) == 4 and SECRET.encode() not in wire  # is not even sent
    assert b"staging password" not in wire
    text = memory_get(user=server.user, memory_id=remembered["result"]["id"]).text
    assert text == "Staging lives on host st-1. "
    row = MemoryFile.objects.get(path="staging.md")
    stored = memory_get(user=server.user, memory_id=row.memory_id).text
    assert stored == "# Staging\n\nDeploy with make stage.\n\n"
    assert SECRET in (folder / "staging.md").read_text()  # the local file keeps it
    if apps.is_installed("knowledge"):
        assert Entity.objects.get(path="docs/runbook.md").body.strip() == (
            "# Runbook\n\nRestart the worker."
        )
    assert json.loads(sync(cli, repo, **via).stdout)["pushed"] == []  # nothing new to send


def test_a_pull_never_replaces_a_file_holding_private_text(two_machines, server):
    a, b, repo_a, repo_b = two_machines
    fa, fb = memdir(a, repo_a), memdir(b, repo_b)
    fa.mkdir(parents=True)
    (fa / "staging.md").write_text(f"Deploy with make stage.\n{PRIVATE}\n")
    sync(a, repo_a)
    sync(b, repo_b, "--pull")
    (fb / "staging.md").write_text("Deploy with make stage, after the smoke test.\n")
    sync(b, repo_b)

    pulled = json.loads(sync(a, repo_a, "--pull").stdout)

    assert (fb / "staging.md").read_text().count("<private>") == 0  # B never had it
    assert SECRET in (fa / "staging.md").read_text()  # A's private text is still there
    assert pulled["conflicts"] == ["staging.md -> staging.conflict-desktop-b.md"]
    other = (fa / "staging.conflict-desktop-b.md").read_text()
    assert other == "Deploy with make stage, after the smoke test.\n"


@pytest.mark.skipif(not apps.is_installed("knowledge"), reason="no knowledge graph installed")
def test_notes_are_what_the_ignore_file_and_the_defaults_leave(cli, server, tmp_path):
    repo = tmp_path / "shop"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text('[remote "origin"]\n\turl = git@github.com:acme/shop\n')
    files = {
        "README.md": "# Shop\n",
        "CHANGELOG.md": "# Changes\n",
        "docs/plan.md": "# Plan\n",
        "docs/hr/salaries.md": "# Salaries\n",
        "notes/draft-1.md": "# Draft\n",
        "notes/a/draft-2.md": "# Draft two\n",
        "notes/decision.md": "# Decision\n",
        "node_modules/pkg/README.md": "# pkg\n",
    }
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    (repo / ".atlasignore").write_text("# never sent\n/docs/hr/\ndraft-*.md\n!CHANGELOG.md\n")

    for rel in files:
        payload = event("PostToolUse", tool_input={"file_path": str(repo / rel)})
        hook(cli, "post-tool-use", payload, repo)
    cli.json("sync", cwd=repo)
    by_hook = set(Entity.objects.values_list("path", flat=True))
    Entity.objects.all().delete()
    cli.run("entity", "index-all", cwd=repo)
    by_command = set(Entity.objects.values_list("path", flat=True))
    plan = cli.json("graph", "reconcile", cwd=repo)

    assert by_hook == by_command == {"CHANGELOG.md", "docs/plan.md", "notes/decision.md"}
    assert "salaries" not in json.dumps(plan)
    kinds = [r["kind"] for r in cli.spool_rows()]
    assert kinds.count("entity.upsert") == 6  # 3 by the hook, 3 by index-all


def test_the_memory_folders_ignore_file_keeps_files_back(two_machines, server):
    a, _, repo_a, _ = two_machines
    folder = memdir(a, repo_a)
    folder.mkdir(parents=True)
    (folder / "testing.md").write_text("make test\n")
    (folder / "scratch-1.md").write_text("half a thought\n")
    (folder / ".atlasignore").write_text("scratch-*.md\n")

    pushed = json.loads(sync(a, repo_a).stdout)["pushed"]
    (folder / "scratch-1.md").unlink()  # an ignored file's removal is no delete either
    again = json.loads(sync(a, repo_a).stdout)

    assert pushed == ["testing.md"] and again["deleted"] == []
    assert list(MemoryFile.objects.values_list("path", flat=True)) == ["testing.md"]


def test_a_pull_never_writes_through_a_link_or_outside_the_folder(two_machines, server, tmp_path):
    a, b, repo_a, repo_b = two_machines
    fa, fb = memdir(a, repo_a), memdir(b, repo_b)
    fa.mkdir(parents=True)
    (fa / "topics").mkdir()
    (fa / "topics" / "db.md").write_text("Postgres 16.\n")
    (fa / "testing.md").write_text("make test\n")
    (fa / "plain.md").write_text("plain\n")
    sync(a, repo_a)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "bashrc.md").write_text("mine\n")
    fb.mkdir(parents=True)
    (fb / "topics").symlink_to(outside, target_is_directory=True)
    (fb / "testing.md").symlink_to(outside / "bashrc.md")

    pulled = json.loads(sync(b, repo_b, "--pull").stdout)

    assert pulled["pulled"] == ["plain.md"]
    assert sorted(s.split(":")[0] for s in pulled["skipped"]) == ["testing.md", "topics/db.md"]
    assert sorted(p.name for p in outside.iterdir()) == ["bashrc.md"]
    assert (outside / "bashrc.md").read_text() == "mine\n"
    assert (fb / "testing.md").is_symlink() and (fb / "topics").is_symlink()


@pytest.mark.parametrize("path", ["\u2025/evil.md", "\uff0e\uff0e/evil.md", "a\u2215evil.md"])
def test_a_path_the_server_should_never_have_held_is_not_written(two_machines, server, path):
    _, b, _, repo_b = two_machines
    folder = memdir(b, repo_b)
    key = b.json("status", cwd=repo_b)["project"]["key"]
    b.run("sync-memories", "--dir", str(folder), cwd=repo_b)  # registers the project
    project = Project.objects.get(key=key)
    doc = memory_write(user=server.user, text="pwned\n", memory_type="semantic")
    MemoryFile.objects.create(  # as a server without today's checks might have stored it
        user=server.user,
        project=project,
        path=path,
        version=1,
        versions=[doc.id],
        content_hash="0" * 64,
        memory_id=doc.id,
        machine_key="laptop-a",
    )

    pulled = json.loads(sync(b, repo_b, "--pull").stdout)

    assert pulled["skipped"] == [path] and pulled["pulled"] == []
    written = [p for p in folder.parent.rglob("*evil*")]
    assert written == []
