"""The PostToolUse hook follows notes renamed through Bash (`mv`, `git mv`, with options,
after a `cd`, a whole folder, into a `-t` folder) and a note written at a new path after its
old file was removed: each keeps its entity. What is no move (an `echo`, a non-markdown file,
a copy whose source is still there) sends nothing."""

from __future__ import annotations

import json
import shutil

import pytest

from knowledge.models import Entity
from tests.cli.conftest import git_repo

pytestmark = pytest.mark.django_db(transaction=True)

NOTES = {
    "docs/a.md": "# Alpha\n\nFirst note.\n",
    "docs/keep.md": "# Keep\n\nStays. See [[a]] and [[c]].\n",
    "notes/c.md": "# Gamma\n\nThird note.\n",
    "notes/d.md": "# Delta\n\nFourth note.\n",
    "e.md": "# Epsilon\n\nFifth note.\n",
    "f.md": "# Phi\n\nSixth note.\n",
}


def bash(cli, repo, command, cwd=None):
    payload = json.dumps(
        {
            "session_id": "s1",
            "hook_event_name": "PostToolUse",
            "cwd": str(cwd or repo),
            "tool_name": "Bash",
            "tool_input": {"command": command},
        }
    )
    done = cli.run("hook", "post-tool-use", stdin=payload, cwd=repo, CLAUDE_PROJECT_DIR=str(repo))
    assert done.returncode == 0 and done.stderr == "", done.stderr


def test_renames_through_bash_and_a_rewrite_after_a_removal_keep_their_entities(
    cli, server, tmp_path
):
    repo = git_repo(tmp_path / "shop", "git@github.com:acme/shop.git")
    for rel, text in NOTES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    assert cli.json("entity", "index-all", cwd=repo)["delivery"]["pending"] == 0
    ids = {e.path: e.pk for e in Entity.objects.all()}

    shutil.move(repo / "docs/a.md", repo / "docs/alpha.md")
    bash(cli, repo, "cd docs && mv -v a.md alpha.md", cwd=repo)
    shutil.move(repo / "notes", repo / "archive")
    bash(cli, repo, f"git -C {repo} mv notes archive")
    (repo / "old").mkdir()
    shutil.move(repo / "e.md", repo / "old" / "e.md")
    bash(cli, repo, "mv -t old e.md && echo done")
    bash(cli, repo, "echo mv docs/keep.md nowhere.md; cp f.md g.md")  # no move happened
    (repo / "f.md").unlink()  # removed, then written again elsewhere: a move
    payload = json.dumps(
        {
            "session_id": "s1",
            "hook_event_name": "PostToolUse",
            "cwd": str(repo),
            "tool_name": "Write",
            "tool_input": {"file_path": str(repo / "phi.md")},
        }
    )
    (repo / "phi.md").write_text(NOTES["f.md"])
    cli.run("hook", "post-tool-use", stdin=payload, cwd=repo, CLAUDE_PROJECT_DIR=str(repo))
    cli.json("sync", cwd=repo)

    now = {e.pk: e for e in Entity.objects.all()}
    assert len(now) == 6  # not one new entity
    expected = {
        "docs/a.md": "docs/alpha.md",
        "notes/c.md": "archive/c.md",
        "notes/d.md": "archive/d.md",
        "e.md": "old/e.md",
        "f.md": "phi.md",
        "docs/keep.md": "docs/keep.md",
    }
    assert {old: now[pk].path for old, pk in ids.items()} == expected
    for old, new in expected.items():
        kinds = [r.kind for r in now[ids[old]].revisions.order_by("number")]
        assert kinds == (["created"] if old == new else ["created", "moved"]), (old, kinds)
    keep = cli.json("graph", "related", "note:docs-keep", cwd=repo)
    assert {(e["target"], e["resolved"]) for e in keep["edges"]} == {
        ("note:docs-alpha", True),
        ("note:archive-c", True),
    }
