"""The graph commands end to end: markdown notes indexed by `atlas entity index-all`, then
blockers, the semantic diff, the handoff brief and a reconcile that plans by default, asks
before applying and deletes only what the manifest misses."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from atlas_platform.config import ChatModelSettings
from knowledge.models import Entity
from tests.cli.conftest import git_repo, make_cli

pytestmark = pytest.mark.django_db(transaction=True)

NOTES = {
    "docs/release.md": "---\nid: release\ntype: plan\ntitle: Ship the release\nstatus: blocked\n"
    "blocked_by: [migration]\n---\nThe release waits for the orders migration.\n",
    "docs/migration.md": "---\nid: migration\ntype: task\ntitle: Migrate the orders table\n"
    "status: in_progress\n---\nMove orders to the new schema.\n",
    "docs/rollout.md": "---\nid: rollout\ntype: plan\ntitle: Roll out by region\n---\n"
    "Europe first, then the Americas.\n",
    "notes/standup.md": "# Standup\n\nNothing blocks the rollout.\n",
}


@pytest.fixture
def repo(tmp_path):
    root = git_repo(tmp_path / "shop", "git@github.com:Acme/Shop.git")
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_graph_commands_over_indexed_notes(cli, server, repo):
    indexed = cli.json("entity", "index-all", cwd=repo)
    assert indexed["spooled"] == 4 and indexed["delivery"]["pending"] == 0
    assert Entity.objects.filter(deleted_at__isnull=True).count() == 4

    blockers = cli.json("graph", "check-blockers", "--stale-days", "0", cwd=repo)
    blocked = {r["entity"]["key"]: r for r in blockers["results"]}
    assert [b["key"] for b in blocked["release"]["blockers"]] == ["migration"]

    today = timezone.now().date()
    since, until = str(today - timedelta(days=1)), str(today + timedelta(days=1))
    diff = cli.json("graph", "semantic-diff", since, until, cwd=repo)
    assert {"release", "migration", "rollout"} <= set(diff["created"])
    quiet = cli.json(
        "graph",
        "semantic-diff",
        str(today - timedelta(days=30)),
        str(today - timedelta(days=20)),
        cwd=repo,
    )
    assert quiet["created"] == [] and quiet["status_changes"] == []

    brief = cli.run("graph", "gen-handoff", cwd=repo)
    assert brief.returncode == 0, brief.stderr
    assert "Ship the release" in brief.stdout  # the active blocker reaches the brief

    (repo / "docs/rollout.md").unlink()
    plan = cli.json("graph", "reconcile", "--root", "docs/", cwd=repo)
    assert [c["key"] for c in plan["candidates"]] == ["rollout"]  # notes/ is not a root
    declined = cli.run("graph", "reconcile", "--root", "docs/", "--apply", stdin="n\n", cwd=repo)
    assert declined.returncode == 0 and "nothing deleted" in declined.stdout
    assert Entity.objects.get(key="rollout").deleted_at is None  # plan only, asked, declined

    applied = cli.json("graph", "reconcile", "--root", "docs/", "--apply", "--yes", cwd=repo)
    assert applied["deleted"] == ["rollout"] and applied["restorable_until"]
    live = set(Entity.objects.filter(deleted_at__isnull=True).values_list("key", flat=True))
    assert live == {"release", "migration", Entity.objects.get(path="notes/standup.md").key}


def test_graph_commands_print_text_by_default_and_read_what_people_type(
    cli, server, repo, settings
):
    from tests.consolidation.fake_llm import FakeChatServer

    assert cli.json("entity", "index-all", cwd=repo)["delivery"]["pending"] == 0
    today = str(timezone.now().date())

    blockers = cli.run("graph", "check-blockers", cwd=repo)  # just indexed: idle 0 days
    related = {
        name: cli.run("graph", "related", name, cwd=repo)
        for name in ("release", "docs/release.md", "Release.md", "ship the release")
    }
    diff = cli.run("graph", "semantic-diff", today, today, cwd=repo)  # today, the whole day
    chat = FakeChatServer()
    try:
        settings.ATLAS_CHAT_MODEL = ChatModelSettings(
            base_url=chat.url, model="test-narrator", api_key="test-key"
        )
        chat.script.append({"narration": "The release waits on the orders migration."})
        narrated = cli.run("graph", "gen-handoff", "--narrate", cwd=repo)
    finally:
        chat.close()

    assert blockers.returncode == 0, blockers.stderr
    assert blockers.stdout.splitlines()[:2] == [
        "release [blocked]  Ship the release",
        "  blocked by migration [in_progress]  Migrate the orders table (idle 0.0 d)",
    ]
    for name, done in related.items():
        assert done.returncode == 0, (name, done.stderr)
        assert done.stdout.splitlines() == [
            "release [blocked]  Ship the release",
            "  blocked_by migration [in_progress]  Migrate the orders table",
        ], name
    assert diff.returncode == 0, diff.stderr
    assert "created: " in diff.stdout and "release" in diff.stdout
    assert not diff.stdout.lstrip().startswith("{")
    assert narrated.returncode == 0, narrated.stderr
    assert "## Narrative\nThe release waits on the orders migration." in narrated.stdout


def checkout(where, remote="git@github.com:Acme/Shop.git", notes=NOTES):
    root = git_repo(where, remote)
    for rel, text in notes.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_a_machine_whose_checkout_is_behind_deletes_nothing_of_the_others_notes(
    atlas_bin, tmp_path, server
):
    """B's checkout is 2 notes behind A's: `reconcile --apply --yes` on B keeps both, says
    why; on A (which wrote them) deleting 2 of 6 is refused until --force, as the refusal
    says."""
    a = make_cli(atlas_bin, tmp_path, server, "laptop-a")
    b = make_cli(atlas_bin, tmp_path, server, "desktop-b")
    newer = {
        **NOTES,
        "docs/pricing.md": "# Pricing\n\nA's new pricing plan.\n",
        "docs/support.md": "# Support\n\nA's new support rota.\n",
    }
    repo_a = checkout(tmp_path / "a" / "shop", notes=newer)
    repo_b = checkout(tmp_path / "b" / "shop", "https://github.com/Acme/Shop.git")
    assert a.json("entity", "index-all", cwd=repo_a)["delivery"]["pending"] == 0
    assert b.json("entity", "index-all", cwd=repo_b)["delivery"]["pending"] == 0

    shown = b.run("graph", "reconcile", cwd=repo_b)
    assert shown.returncode == 0, shown.stderr
    assert "docs-pricing (docs/pricing.md): keep: machine desktop-b has not seen" in shown.stdout
    applied = b.json("graph", "reconcile", "--apply", "--yes", cwd=repo_b)
    assert applied["deleted"] == [] and applied["status"] == "applied"
    assert Entity.objects.filter(deleted_at__isnull=True).count() == 6

    for rel in ("docs/pricing.md", "docs/support.md"):
        (repo_a / rel).unlink()
    refused = a.run("graph", "reconcile", "--apply", "--yes", cwd=repo_a)
    assert refused.returncode == 5 and "too_many_deletions" in refused.stderr
    assert "--force" in refused.stderr
    forced = a.json("graph", "reconcile", "--apply", "--yes", "--force", cwd=repo_a)
    assert sorted(forced["deleted"]) == ["note:docs-pricing", "note:docs-support"]
