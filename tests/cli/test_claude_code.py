"""The real client end to end: Claude Code (from npm) run headless against a scripted model on
loopback, in projects whose hooks ``atlas hooks install`` wrote, against a live Atlas on real
Elasticsearch, on two simulated machines."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from django.apps import apps

from agents.models import Session
from knowledge.models import Entity
from tests.cli import claude_code
from tests.cli.conftest import git_repo, make_cli

pytestmark = pytest.mark.django_db(transaction=True)

PLAN = (
    "---\ntype: plan\ntitle: Migrate the orders table\nstatus: blocked\n"
    "blocked_by: [task:db-upgrade]\n---\n# Migrate the orders table\n\nSplit it by year.\n"
)


@pytest.fixture(scope="module")
def claude():
    return claude_code.install()


@pytest.fixture
def model():
    def script(body):
        tools = [t.get("name") for t in body.get("tools") or []]
        blocks = claude_code.last_user_blocks(body)
        if any(b.get("type") == "tool_result" for b in blocks):
            return [{"type": "text", "text": "The plan is written."}]
        said = " ".join(str(b.get("text", "")) for b in blocks)
        if "Bash" in tools and "rename the plan" in said:
            return [
                {
                    "type": "tool_use",
                    "id": "toolu_rename",
                    "name": "Bash",
                    "input": {
                        "command": "git mv docs/plan.md docs/orders-plan.md",
                        "description": "Rename the plan",
                    },
                }
            ]
        if "Write" in tools and "write the plan" in said:
            found = re.search(r"(/\S+/plan\.md)", said)
            assert found is not None, said
            path = found.group(1)
            return [
                {
                    "type": "tool_use",
                    "id": "toolu_plan",
                    "name": "Write",
                    "input": {"file_path": path, "content": PLAN},
                }
            ]
        return [{"type": "text", "text": "Nothing to do."}]

    scripted = claude_code.ScriptedModel(script)
    yield scripted
    scripted.close()


def run_claude(claude, cli, repo, model, prompt, tools="Write"):
    env = cli.env(
        ANTHROPIC_BASE_URL=model.url,
        ANTHROPIC_API_KEY="scripted",
        CLAUDE_CODE_TMPDIR=str(cli.home / "tmp"),
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_TELEMETRY="1",
        DISABLE_AUTOUPDATER="1",
        CLAUDE_CODE_MAX_RETRIES="0",
    )
    (cli.home / "tmp").mkdir(exist_ok=True)
    done = subprocess.run(
        [str(claude), "-p", prompt, "--output-format", "json", "--allowedTools", tools],
        cwd=repo,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    return json.loads(done.stdout)


def install_hooks(cli, repo):
    done = cli.run(
        "hooks", "install", "--scope", "project", "--command", str(cli.bin / "atlas"), cwd=repo
    )
    assert done.returncode == 0, done.stderr


def test_claude_code_sessions_on_two_machines_share_their_work_through_atlas(
    claude, model, atlas_bin, tmp_path, server
):
    a = make_cli(atlas_bin, tmp_path, server, "laptop-a")
    repo_a = git_repo(tmp_path / "laptop" / "shop", "git@github.com:acme/shop.git")
    install_hooks(a, repo_a)
    a.run("task", "start", "Upgrade the database", cwd=repo_a)

    first = run_claude(claude, a, repo_a, model, f"Please write the plan at {repo_a}/docs/plan.md")
    a.json("sync", cwd=repo_a)

    assert first["result"] == "The plan is written."
    assert (repo_a / "docs" / "plan.md").exists(), json.dumps(model.requests[-1]["messages"][-1])[
        :3000
    ]
    assert (repo_a / "docs" / "plan.md").read_text() == PLAN
    [session] = Session.objects.filter(agent__slug="claude-code")
    assert session.turns >= 1 and session.writes >= 1 and session.ended_at is not None
    assert (
        session.project is not None
        and session.project.key == a.json("status", cwd=repo_a)["project"]["key"]
    )
    assert session.files_touched == ["docs/plan.md"]  # relative to the project, on any machine
    upserts = [r for r in a.spool_rows() if r["kind"] == "entity.upsert"]
    assert len(upserts) == 1
    if apps.is_installed("knowledge"):  # the knowledge graph (issue 19) on this server
        assert upserts[0]["state"] == "done", upserts[0]
        found = a.json("graph", "search", "orders table migration", cwd=repo_a)
        entity = found["results"][0]["entity"]
        assert entity["title"] == "Migrate the orders table" and entity["status"] == "blocked"
        related = a.json("graph", "related", entity["key"], cwd=repo_a)
        assert any(e["label"] == "blocked_by" for e in related["edges"])
    else:  # an operation this server does not know is set aside with the reason, not lost
        assert upserts[0]["state"] == "quarantined" and "op" in upserts[0]["error"]

    # the next session on this machine starts with the handoff brief in the model's context
    before = len(model.requests)
    run_claude(claude, a, repo_a, model, "What is open?")
    seen = " ".join(claude_code.text_of(r) for r in model.requests[before:])
    assert "Atlas brief" in seen and "Upgrade the database" in seen

    # a second machine, another checkout of the same repository, sees the first one's work
    b = make_cli(atlas_bin, tmp_path, server, "desktop-b")
    repo_b = git_repo(tmp_path / "desktop" / "work" / "shop", "https://github.com/acme/shop.git")
    install_hooks(b, repo_b)
    before = len(model.requests)
    run_claude(claude, b, repo_b, model, "What happened on the laptop?")
    seen = " ".join(claude_code.text_of(r) for r in model.requests[before:])
    last_on_a = Session.objects.filter(machine__key="laptop-a").latest("started_at")
    assert "Last session with work" in seen and "claude-code on laptop-a" in seen
    assert last_on_a.external_id in seen and "Upgrade the database" in seen
    assert Session.objects.filter(project__key=session.project.key).count() == 3


def real_git_repo(where, remote):
    """A git checkout (``git mv`` needs one) with its origin remote."""
    where.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(where)], check=True)
    subprocess.run(["git", "-C", str(where), "remote", "add", "origin", remote], check=True)
    return where


def test_a_note_renamed_with_git_mv_through_claude_code_keeps_its_entity_and_links(
    claude, model, atlas_bin, tmp_path, server
):
    """Claude Code runs `git mv` through its Bash tool: the PostToolUse hook sees the move,
    the entity moves with the file (same entity, history continued), and the [[plan]] link
    of another note and the old key still resolve to it."""
    a = make_cli(atlas_bin, tmp_path, server, "laptop-a")
    repo = real_git_repo(tmp_path / "laptop" / "shop", "git@github.com:acme/shop.git")
    (repo / "docs").mkdir()
    (repo / "docs" / "plan.md").write_text(PLAN)
    (repo / "docs" / "index.md").write_text("# Index\n\nThe migration: [[plan]].\n")
    subprocess.run(["git", "-C", str(repo), "add", "docs"], check=True)
    install_hooks(a, repo)
    assert a.json("entity", "index-all", cwd=repo)["delivery"]["pending"] == 0
    before = Entity.objects.get(key="plan:docs-plan")

    run_claude(claude, a, repo, model, "Please rename the plan to orders-plan", tools="Bash")
    assert (repo / "docs" / "orders-plan.md").read_text() == PLAN
    assert not (repo / "docs" / "plan.md").exists()
    a.json("sync", cwd=repo)
    [moved] = [r for r in a.spool_rows() if "moved_from" in r["args"]]
    assert moved["state"] == "done" and json.loads(moved["args"])["moved_from"] == "docs/plan.md"

    entity = Entity.objects.get(pk=before.pk)
    assert (entity.key, entity.path, entity.deleted_at) == (
        "plan:docs-orders-plan",
        "docs/orders-plan.md",
        None,
    )
    assert [r.kind for r in entity.revisions.order_by("number")] == ["created", "moved"]
    assert Entity.objects.count() == 2  # no second entity for the new path
    related = a.json("graph", "related", "note:docs-index", cwd=repo)
    assert {(e["target"], e["resolved"]) for e in related["edges"]} == {
        ("plan:docs-orders-plan", True)
    }
    by_old_key = a.json("graph", "related", "plan:docs-plan", cwd=repo)
    assert by_old_key["root"]["key"] == "plan:docs-orders-plan"


def claude_memory(cli, repo):
    """Claude Code's auto-memory folder of ``repo`` on that machine (its CLAUDE_CONFIG_DIR)."""
    return cli.home / "claude" / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(repo)) / "memory"


def test_a_memory_file_conflict_on_machine_b_is_named_first_in_bs_next_session(
    claude, model, atlas_bin, tmp_path, server
):
    a = make_cli(atlas_bin, tmp_path, server, "laptop-a")
    b = make_cli(atlas_bin, tmp_path, server, "desktop-b")
    b.env_extra["ATLAS_HOOK_BUDGET_S"] = "10"  # a loaded CI box: the live brief, not offline
    repo_a = git_repo(tmp_path / "laptop" / "shop", "git@github.com:acme/shop.git")
    repo_b = git_repo(tmp_path / "desktop" / "shop", "https://github.com/acme/shop.git")
    install_hooks(b, repo_b)
    fa, fb = claude_memory(a, repo_a), claude_memory(b, repo_b)
    fa.mkdir(parents=True)
    (fa / "testing.md").write_text("Run make test.\n")
    a.run("sync-memories", cwd=repo_a)
    b.run("sync-memories", "--pull", cwd=repo_b)
    (fa / "testing.md").write_text("Run make test, then make lint.\n")
    a.run("sync-memories", cwd=repo_a)
    (fb / "testing.md").write_text("Run make test -j4.\n")  # B's edit of the old version

    before = len(model.requests)
    run_claude(claude, b, repo_b, model, "What should I know?")

    seen = " ".join(claude_code.text_of(r) for r in model.requests[before:])
    assert "Memory-file conflicts: 1 open" in seen
    assert "`testing.md` was changed here and on laptop-a" in seen
    assert seen.index("Memory-file conflicts") < seen.index("Atlas brief")
    assert (fb / "testing.conflict-laptop-a.md").read_text() == "Run make test, then make lint.\n"
    assert (fb / "testing.md").read_text() == "Run make test -j4.\n"
