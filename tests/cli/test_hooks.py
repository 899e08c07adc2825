"""Claude Code hooks as Claude Code runs them (a command, JSON on stdin): what each does on a
live server, that each exits 0 within its budget whatever happens, and ``hooks install``'s
merge into settings.json."""

from __future__ import annotations

import json
import math
import time

import pytest

from agents.models import MemoryFile, Session
from memory.selectors import memory_get
from tests.cli.conftest import free_port, git_repo, make_cli

pytestmark = pytest.mark.django_db(transaction=True)


def event(name, session="sess-1", **fields):
    return json.dumps({"session_id": session, "hook_event_name": name, "cwd": "", **fields})


# What a live server's brief holds, whatever the machine's load: a loaded CI box cannot always
# compose it inside the default 3 s, and the hook then (rightly) answers "offline". The budget
# itself has its own tests: a server away (below) and a 10-second server (test_delivery.py).
LIVE_BUDGET = {"ATLAS_HOOK_BUDGET_S": "10"}


def hook(cli, name, payload, cwd, **env):
    started = time.monotonic()
    done = cli.run("hook", name, stdin=payload, cwd=cwd, CLAUDE_PROJECT_DIR=str(cwd), **env)
    return done, time.monotonic() - started


def test_a_session_start_stop_end_is_one_session_with_its_turns_and_a_brief(cli, server, tmp_path):
    repo = git_repo(tmp_path / "shop", "git@github.com:acme/shop.git")
    cli.run("remember", "The shop uses Stripe for payments", cwd=repo)
    cli.run("task", "start", "Migrate the checkout", cwd=repo)

    start, took = hook(
        cli, "session-start", event("SessionStart", source="startup"), repo, **LIVE_BUDGET
    )
    for _ in range(3):
        hook(cli, "stop", event("Stop", stop_hook_active=False), repo)
    hook(cli, "session-end", event("SessionEnd", reason="prompt_input_exit"), repo)

    assert start.returncode == 0 and took < 13
    brief = json.loads(start.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Migrate the checkout" in brief and "Stripe" in brief
    session = Session.objects.get(external_id="sess-1")
    assert session.turns == 3 and session.end_reason == "user_exit" and session.ended_at
    assert (
        session.project is not None
        and session.project.key == cli.json("status", cwd=repo)["project"]["key"]
    )


def test_the_brief_is_cached_and_marked_offline_when_the_server_is_away(cli, server, tmp_path):
    repo = git_repo(tmp_path / "shop", "git@github.com:acme/shop.git")
    cli.run("task", "start", "Write the runbook", cwd=repo)
    hook(cli, "session-start", event("SessionStart", session="s-a"), repo, **LIVE_BUDGET)

    offline, took = hook(
        cli,
        "session-start",
        event("SessionStart", session="s-b"),
        repo,
        ATLAS_URL=f"http://127.0.0.1:{free_port()}",
    )

    brief = json.loads(offline.stdout)["hookSpecificOutput"]["additionalContext"]
    assert offline.returncode == 0 and took < 6
    assert "(Atlas is offline: the brief below was cached at " in brief
    assert "Write the runbook" in brief
    # What only this machine knows comes first: the session start it could not deliver.
    assert brief.startswith("## On this machine\n- 1 write(s) from this machine are spooled")


def test_the_session_start_brief_is_one_budgeted_brief_about_this_project(
    cli, atlas_bin, server, tmp_path
):
    """Two machines, two checkouts of one repository (another path, another remote spelling)
    and a second project: the brief on the laptop holds the desktop's decision with its reason
    and its session's files relative to the project, this project's memories only, every line
    once, the project key, within the budget asked for."""
    desk = make_cli(atlas_bin, tmp_path, server, "desktop-b")
    shop_a = git_repo(tmp_path / "a" / "shop", "git@github.com:acme/shop.git")
    shop_b = git_repo(tmp_path / "b" / "work" / "shop", "https://github.com/acme/shop")
    blog = git_repo(tmp_path / "a" / "blog", "git@github.com:acme/blog.git")
    note = shop_b / "docs" / "decisions" / "payments.md"
    note.parent.mkdir(parents=True)
    note.write_text(
        "---\ntype: decision\nstatus: accepted\n---\n# Stripe for payments\n\n"
        "We chose Stripe because it settles in euros without a second account.\n"
    )
    hook(desk, "session-start", event("SessionStart", session="d-1"), shop_b, **LIVE_BUDGET)
    written = event(
        "PostToolUse", session="d-1", tool_name="Write", tool_input={"file_path": str(note)}
    )
    hook(desk, "post-tool-use", written, shop_b)
    hook(desk, "stop", event("Stop", session="d-1"), shop_b)
    assert desk.run("sync", cwd=shop_b).returncode == 0
    cli.run("remember", "Shop invoices are numbered per calendar year", cwd=shop_a)
    cli.run("remember", "Blog invoices are never numbered at all", cwd=blog)
    cli.run("task", "start", "Build the refund flow", cwd=shop_a)

    start, _ = hook(
        cli,
        "session-start",
        event("SessionStart", session="l-1"),
        shop_a,
        ATLAS_BRIEF_TOKENS="600",
        **LIVE_BUDGET,
    )

    brief = json.loads(start.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "settles in euros without a second account" in brief  # the decision's reason
    assert "docs/decisions/payments.md" in brief and str(tmp_path) not in brief
    assert "Build the refund flow" in brief and "numbered per calendar year" in brief
    assert "never numbered" not in brief  # the blog's memory
    assert cli.json("status", cwd=shop_a)["project"]["key"] in brief
    items = [line for line in brief.splitlines() if line.startswith("- ")]
    assert len(items) == len(set(items))
    assert math.ceil(len(brief) / 4) <= 600
    assert brief.count("Build the refund flow") == 1  # not a second "open tasks" section


def test_a_memory_file_written_while_the_server_refuses_is_delivered_once_by_the_next_sync(
    cli, server, tmp_path
):
    repo = git_repo(tmp_path / "shop", "git@github.com:acme/shop.git")
    folder = (
        cli.home / "claude" / "projects" / str(repo).replace("/", "-").replace("_", "-") / "memory"
    )
    folder.mkdir(parents=True)
    (folder / "deploys.md").write_text("---\nname: deploys\n---\nBlue-green, Fridays only.\n")
    closed = f"http://127.0.0.1:{free_port()}"
    payload = event(
        "PostToolUse", tool_name="Write", tool_input={"file_path": str(folder / "deploys.md")}
    )

    done, took = hook(cli, "post-tool-use", payload, repo, ATLAS_URL=closed)
    first = cli.json("sync", cwd=repo)
    second = cli.json("sync", cwd=repo)

    assert done.returncode == 0 and took < 3 and done.stdout == ""
    assert first["rejected"] == [] and second["sent"] == 0
    row = MemoryFile.objects.get(path="deploys.md")
    assert memory_get(user=server.user, memory_id=row.memory_id).text.endswith("Fridays only.\n")


def test_pre_compact_keeps_a_checkpoint_as_an_episodic_memory(cli, server, tmp_path):
    repo = git_repo(tmp_path / "shop", "git@github.com:acme/shop.git")
    hook(cli, "session-start", event("SessionStart"), repo)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(
        json.dumps({"message": {"role": "user", "content": "Add retries to the payment client"}})
        + "\n"
        + json.dumps(
            {
                "message": {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "name": "Write",
                            "input": {"file_path": "pay/client.py"},
                        },
                        {"type": "text", "text": "Retries added with exponential backoff."},
                    ],
                }
            }
        )
    )

    done, _ = hook(
        cli,
        "pre-compact",
        event("PreCompact", trigger="manual", transcript_path=str(transcript)),
        repo,
    )
    cli.json("sync", cwd=repo)

    assert done.returncode == 0
    found = cli.json("recall", "payment client retries", cwd=repo)
    episodes = [h for h in found["hits"] if h["memory_type"] == "episodic"]
    assert episodes and "pay/client.py" in episodes[0]["text"]


@pytest.mark.parametrize("stdin", ["", "{not json", "[1, 2]", "\x00\xff"])
@pytest.mark.parametrize(
    "name", ["session-start", "post-tool-use", "stop", "session-end", "pre-compact"]
)
def test_malformed_or_empty_stdin_exits_0_at_once(cli, server, tmp_path, name, stdin):
    repo = git_repo(tmp_path / "shop", "git@github.com:acme/shop.git")

    done, took = hook(cli, name, stdin, repo, ATLAS_URL=f"http://127.0.0.1:{free_port()}")

    assert done.returncode == 0 and took < 6
    if name != "session-start":
        assert done.stdout == ""  # stdout would reach the model


def test_hooks_install_merges_idempotently_and_uninstall_removes_exactly_its_entries(cli, tmp_path):
    repo = git_repo(tmp_path / "shop", "git@github.com:acme/shop.git")
    settings = repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    theirs = {"matcher": "Bash", "hooks": [{"type": "command", "command": "echo mine"}]}
    settings.write_text(json.dumps({"model": "x", "hooks": {"PostToolUse": [theirs]}}))

    for _ in range(2):
        assert cli.run("hooks", "install", "--scope", "project", cwd=repo).returncode == 0
    installed = json.loads(settings.read_text())
    backups = list(settings.parent.glob("settings.json.atlas-backup-*"))
    cli.run("hooks", "uninstall", "--scope", "project", cwd=repo)
    after = json.loads(settings.read_text())

    hooks = installed["hooks"]
    assert sorted(hooks) == ["PostToolUse", "PreCompact", "SessionEnd", "SessionStart", "Stop"]
    ours = [
        h
        for groups in hooks.values()
        for g in groups
        for h in g["hooks"]
        if "atlas" in h["command"]
    ]
    assert len(ours) == 5  # installing twice added nothing
    assert hooks["PostToolUse"][0] == theirs and installed["model"] == "x"
    assert backups
    assert (
        cli.run(
            "login", "--url", "http://x", "--user", "u", "--token", "atlas_secret", "--no-check"
        ).returncode
        == 0
    )
    assert "atlas_" not in settings.read_text() and "token" not in json.dumps(installed).lower()
    assert after == {"model": "x", "hooks": {"PostToolUse": [theirs]}}


def test_hooks_install_never_overwrites_the_original_settings_backup(cli, tmp_path):
    repo = git_repo(tmp_path / "shop", "git@github.com:acme/shop.git")
    settings = repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    original = json.dumps({"model": "mine", "hooks": {}})
    settings.write_text(original)

    runs = [cli.json("hooks", "install", "--scope", "project", cwd=repo) for _ in range(3)]
    cli.run("hooks", "uninstall", "--scope", "project", cwd=repo)
    cli.run("hooks", "install", "--scope", "project", cwd=repo)

    kept = settings.parent / "settings.json.atlas-original"
    backups = sorted(settings.parent.glob("settings.json.atlas-backup-*"))
    assert kept.read_text() == original  # the file before atlas, whatever came after
    assert all(r["original"] == str(kept) for r in runs)
    assert len(backups) == 5 and len({r["backup"] for r in runs}) == 3  # one per change
    assert backups[0].read_text() == original
