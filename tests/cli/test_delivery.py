"""The spool's delivery semantics against a live server, one failure per test: every write is
delivered exactly once, whatever the network or the cluster did in between."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from typing import Any

import pytest

from agents.models import Task
from agents.services.operations import operations_apply
from atlas_platform.models import LedgerEntry
from knowledge.models import Entity
from memory.selectors import memory_counts
from tenants.models import PlatformToken
from tenants.services.tokens import token_revoke
from tests.cli.conftest import free_port, git_repo, wait_for
from tests.knowledge.test_api import HOSTILE

pytestmark = pytest.mark.django_db(transaction=True)


def semantic(user) -> int:
    return memory_counts(user=user).get("semantic", 0)


def test_remember_online_is_applied_and_recalled(cli, server):
    done = cli.json(
        "remember", "decision", "We deploy with blue-green on Fridays", "--title", "deploys"
    )

    assert done["state"] == "done" and done["status"] == "applied"
    found = cli.json("recall", "how do we deploy")
    assert any("blue-green" in h["text"] for h in found["hits"])
    assert semantic(server.user) == 1


def test_remember_while_the_server_refuses_connections_is_delivered_once_by_the_next_sync(
    cli, server
):
    closed = f"http://127.0.0.1:{free_port()}"

    offline = cli.run("remember", "The staging database is db-7", ATLAS_URL=closed)
    read = cli.run("recall", "staging database", ATLAS_URL=closed)
    first = cli.json("sync")
    again = cli.json("sync")

    assert offline.returncode == 0 and "spooled" in offline.stdout
    assert read.returncode == 3 and "offline" in read.stderr  # a read fails clearly
    assert first["applied"] == 2 and first["pending"] == 0  # the project and the memory
    assert again["sent"] == 0
    assert semantic(server.user) == 1


def test_an_answer_lost_after_the_server_applied_it_replays_as_a_duplicate(cli, server, proxy):
    proxy.mode = "drop"
    lost = cli.run("remember", "The release branch is cut on Mondays", ATLAS_URL=proxy.url)
    assert lost.returncode == 0 and "spooled" in lost.stdout
    assert proxy.dropped == 1 and semantic(server.user) == 1  # applied, answer never arrived

    proxy.mode = "pass"
    replay = cli.json("sync", ATLAS_URL=proxy.url)

    assert replay["duplicate"] == 2 and replay["applied"] == 0  # the project and the memory
    assert semantic(server.user) == 1
    assert [r["status"] for r in cli.spool_rows() if r["kind"] == "memory.write"] == ["duplicate"]


def test_the_cluster_down_during_a_batch_is_retried_then_applied_exactly_once(
    cli, server, settings
):
    cli.run("task", "start", "Rotate the keys", ATLAS_URL=f"http://127.0.0.1:{free_port()}")
    cli.run("remember", "Keys rotate every 90 days", ATLAS_URL=f"http://127.0.0.1:{free_port()}")
    good_url = settings.ATLAS_ES_URL
    settings.ATLAS_ES_URL = f"http://127.0.0.1:{free_port()}"  # the server's cluster is gone

    during = cli.json("sync")

    settings.ATLAS_ES_URL = good_url
    after = cli.json("sync")

    assert during["applied"] == 3 and during["retry"] == 1  # rows applied, the memory waits
    assert after["applied"] == 1 and after["pending"] == 0
    assert semantic(server.user) == 1
    assert Task.objects.get().state == "in_progress"


def test_kill_9_between_spooling_and_sending_is_delivered_by_the_next_run(cli, server, proxy):
    proxy.mode = "hold"  # the request never leaves the proxy
    process = subprocess.Popen(
        [str(cli.bin / "atlas"), "remember", "Never lose this note"],
        env=cli.env(ATLAS_URL=proxy.url),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_for(lambda: cli.spool_file.exists() and any(r["sent_at"] for r in cli.spool_rows()))
    os.kill(process.pid, signal.SIGKILL)
    process.wait()

    delivered = cli.json("sync")

    assert delivered["applied"] == 2  # the project and the memory
    assert semantic(server.user) == 1


def test_two_syncs_at_once_deliver_every_operation_once(cli, server):
    closed = f"http://127.0.0.1:{free_port()}"
    for n in range(20):
        assert cli.run("task", "start", f"Task {n}", ATLAS_URL=closed).returncode == 0

    runs = [
        subprocess.Popen(
            [str(cli.bin / "atlas"), "sync", "--json"],
            env=cli.env(),
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    reports = [json.loads(p.communicate(timeout=120)[0]) for p in runs]

    assert sum(r["applied"] for r in reports) == 41  # 20 creates, 20 starts, 1 project
    assert sum(r["duplicate"] for r in reports) == 0
    assert Task.objects.count() == 20
    assert set(Task.objects.values_list("state", flat=True)) == {"in_progress"}


def test_a_tampered_payload_is_quarantined_and_the_rest_delivered(cli, server):
    closed = f"http://127.0.0.1:{free_port()}"
    cli.run("remember", "first note", ATLAS_URL=closed)
    cli.run("remember", "second note", ATLAS_URL=closed)
    with sqlite3.connect(cli.spool_file) as db:
        db.execute(
            "UPDATE ops SET args = replace(args, 'first note', 'forged note') "
            "WHERE kind = 'memory.write' AND args LIKE '%first note%'"
        )

    report = cli.json("sync")
    listing = cli.json("spool", "ls")

    assert report["applied"] == 2  # the project and the second note
    [bad] = listing["operations"]
    assert bad["state"] == "quarantined" and "tampered" in bad["error"]
    assert semantic(server.user) == 1


def test_a_spool_overwritten_with_garbage_is_set_aside_and_a_new_one_started(cli, server):
    cli.run("remember", "before", ATLAS_URL=f"http://127.0.0.1:{free_port()}")
    cli.spool_file.write_bytes(os.urandom(8192))

    after = cli.run("remember", "after the corruption")

    assert after.returncode == 0 and "set aside" in after.stderr
    aside = [p.name for p in cli.spool_file.parent.iterdir() if ".corrupt-" in p.name]
    assert aside and semantic(server.user) == 1


def test_a_full_spool_refuses_the_write_loudly_and_keeps_what_it_had(cli, server):
    closed = f"http://127.0.0.1:{free_port()}"
    cli.run("remember", "kept", ATLAS_URL=closed)
    big = "x" * 3000
    codes = [
        cli.run("remember", f"{n} {big}", ATLAS_URL=closed, ATLAS_SPOOL_MAX_MB="0.1").returncode
        for n in range(40)
    ]
    transcript = cli.home / "t.jsonl"
    lines: list[dict[str, Any]] = [
        {"message": {"role": "user", "content": f"prompt {n} " + "y" * 290}} for n in range(8)
    ]
    lines.append(
        {"message": {"role": "assistant", "content": [{"type": "text", "text": "z" * 1500}]}}
    )
    transcript.write_text("\n".join(json.dumps(line) for line in lines))
    event = {
        "session_id": "s1",
        "hook_event_name": "PreCompact",
        "transcript_path": str(transcript),
    }
    hook = cli.run("hook", "pre-compact", stdin=json.dumps(event), ATLAS_SPOOL_MAX_MB="0.1")

    assert 6 in codes  # "the write was NOT recorded"
    assert hook.returncode == 0 and "full" in hook.stderr
    assert any("kept" in r["args"] for r in cli.spool_rows())


def test_a_rejected_operation_does_not_block_the_others(cli, server):
    closed = f"http://127.0.0.1:{free_port()}"
    cli.run("reply", "999999", "nobody sent this", ATLAS_URL=closed)
    cli.run("remember", "after the bad one", ATLAS_URL=closed)

    report = cli.run("sync", "--json")

    data = json.loads(report.stdout)
    assert report.returncode == 5
    assert len(data["rejected"]) == 1 and data["applied"] == 2
    assert semantic(server.user) == 1


def test_hostile_notes_are_quarantined_and_the_spool_moves_past_them(cli, server, tmp_path):
    """The red team's front matter, indexed offline then replayed in one batch: each hostile
    note is rejected alone (quarantined, with the field named), the good notes and what was
    spooled after them apply, and the next sync has nothing left to send."""
    repo = git_repo(tmp_path / "shop", "git@github.com:Acme/Shop.git")
    (repo / "docs").mkdir()
    (repo / "docs/a-good.md").write_text("---\nid: good\ndue: 0000-00-00\n---\n# Good\n")
    for name, yaml_text in HOSTILE.items():
        (repo / f"docs/hostile-{name}.md").write_text(f"---\n{yaml_text}\n---\nBody.\n")
    closed = f"http://127.0.0.1:{free_port()}"
    offline = cli.run("entity", "index-all", cwd=repo, ATLAS_URL=closed)
    assert offline.returncode == 0, offline.stderr
    cli.run("remember", "written after the hostile notes", ATLAS_URL=closed)

    first = cli.run("sync", "--json", cwd=repo)
    again = cli.json("sync", cwd=repo)

    report = json.loads(first.stdout)
    assert first.returncode == 5, first.stderr  # something was rejected: said, not hidden
    assert len(report["rejected"]) == len(HOSTILE) and report["pending"] == 0
    assert report["stopped"] is None
    assert {r["error"]["code"] for r in report["rejected"]} == {"bad_front_matter"}
    assert again["sent"] == 0 and again["pending"] == 0
    done = [r["kind"] for r in cli.spool_rows() if r["state"] == "done"]
    assert report["applied"] == len(done) and done.count("entity.upsert") == 1
    assert "memory.write" in done  # spooled after the hostile notes, applied all the same
    quarantined = [r for r in cli.spool_rows() if r["state"] == "quarantined"]
    assert len(quarantined) == len(HOSTILE)
    assert all(json.loads(r["error"])["details"]["field"] == "front_matter.x" for r in quarantined)
    assert list(Entity.objects.values_list("key", flat=True)) == ["good"]
    assert semantic(server.user) == 1


def test_a_batch_the_server_fails_on_is_sent_op_by_op_and_only_the_bad_one_waits(
    cli, server, monkeypatch
):
    """A server bug that one operation triggers for its whole batch (a fault injected in the
    live server): the CLI sends each alone, the others apply, the bad one waits (backoff)."""

    def buggy(*, user, operations, agent=None):
        if any(op.kind == "task.create" for op in operations):
            raise RuntimeError("a bug this operation triggers")
        return operations_apply(user=user, operations=operations, agent=agent)

    monkeypatch.setattr("agents.api.refs.operations_apply", buggy)
    closed = f"http://127.0.0.1:{free_port()}"
    cli.run("remember", "before the poison", ATLAS_URL=closed)
    cli.run("task", "start", "The poisoned task", ATLAS_URL=closed)
    cli.run("remember", "after the poison", ATLAS_URL=closed)

    report = cli.json("sync")

    assert report["stopped"] is None and report["retry"] == 1 and report["pending"] == 2
    waiting = [r for r in cli.spool_rows() if r["state"] == "pending"]
    assert [r["kind"] for r in waiting] == ["task.create", "task.transition"]  # it waits too
    assert json.loads(waiting[0]["error"])["code"] == "internal_error"
    assert semantic(server.user) == 2 and Task.objects.count() == 0


def test_a_revoked_token_stops_delivery_and_drops_nothing(cli, server):
    cli.run("remember", "written before the revoke", ATLAS_URL=f"http://127.0.0.1:{free_port()}")
    token_revoke(token=PlatformToken.objects.get(name="laptop"))

    report = cli.run("sync", "--json")

    assert report.returncode == 4 and json.loads(report.stdout)["auth_failed"]
    assert {r["state"] for r in cli.spool_rows()} == {"pending"}


def test_a_10_second_server_costs_the_hook_its_budget_only_and_nothing_is_lost(cli, server, proxy):
    proxy.mode, proxy.delay = "slow", 10.0
    started = time.monotonic()
    hook = cli.run(
        "hook",
        "session-start",
        stdin=json.dumps(
            {"session_id": "slow-1", "hook_event_name": "SessionStart", "source": "startup"}
        ),
        ATLAS_URL=proxy.url,
    )
    took = time.monotonic() - started
    remember = cli.run(
        "--timeout", "1", "remember", "written against a slow server", ATLAS_URL=proxy.url
    )

    assert hook.returncode == 0 and took < 8, took
    brief = json.loads(hook.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "offline" in brief
    assert remember.returncode == 0 and "spooled" in remember.stdout
    proxy.mode = "pass"
    time.sleep(10.5)  # the slow requests reach the server meanwhile
    cli.json("sync")
    assert semantic(server.user) == 1
    assert LedgerEntry.objects.filter(request="memory.write").count() == 1
    assert {r["state"] for r in cli.spool_rows()} == {"done"}


def test_recall_keyword_and_semantic_run_one_leg_each(cli, server):
    cli.run("remember", "The invoice service is written in Rust")

    keyword = cli.json("recall", "invoice Rust", "--keyword")
    semantic = cli.json("recall", "which language is billing code in", "--semantic")
    bad = server_recall(server, {"query": "x", "mode": "telepathy"})

    assert any("Rust" in h["text"] for h in keyword["hits"])
    assert any("Rust" in h["text"] for h in semantic["hits"])
    assert bad.status == 400


def server_recall(server, body):
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        f"{server.url}/api/v1/users/alice/recall",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response
    except urllib.error.HTTPError as exc:
        return exc


def test_task_starts_replayed_from_a_backlog_travel_in_one_request(cli, server, proxy):
    closed = f"http://127.0.0.1:{free_port()}"
    for n in range(15):
        assert cli.run("task", "start", f"Task {n}", ATLAS_URL=closed).returncode == 0

    report = cli.json("sync", ATLAS_URL=proxy.url)

    assert report["applied"] == 31 and report["pending"] == 0  # 15 creates, 15 starts, 1 project
    assert proxy.forwarded == 1  # each create and its transition in the same batch
    assert set(Task.objects.values_list("state", flat=True)) == {"in_progress"}


def backlog(cli, notes: int) -> None:
    closed = f"http://127.0.0.1:{free_port()}"
    for n in range(notes):
        assert cli.run("remember", f"backlog note {n}", ATLAS_URL=closed).returncode == 0
    with sqlite3.connect(cli.spool_file) as db:  # small batches: several requests
        db.execute("INSERT OR REPLACE INTO kv (key, value) VALUES ('batch_size', '2')")


def test_a_throttled_replay_waits_as_told_and_delivers_everything(cli, server, settings):
    from django.core.cache import cache

    settings.ATLAS_RATE_OPERATIONS = "1/s"
    cache.clear()
    backlog(cli, 3)

    report = cli.run("sync", "--json")

    data = json.loads(report.stdout)
    assert report.returncode == 0, report.stderr
    assert data["applied"] == 4 and data["pending"] == 0  # the project and 3 notes
    assert semantic(server.user) == 3


def test_a_throttled_replay_out_of_time_exits_7_and_other_machines_go_on(
    cli, server, settings, atlas_bin, tmp_path
):
    from django.core.cache import cache

    from agents.models import Agent
    from agents.services.agents import agent_token_issue
    from tests.cli.conftest import Cli

    settings.ATLAS_RATE_OPERATIONS = "1/min"
    cache.clear()
    backlog(cli, 3)
    desk = Cli(bin=atlas_bin, home=tmp_path / "desk", machine="desk", url=server.url)
    desk.home.mkdir()
    desk_token = agent_token_issue(agent=Agent.objects.get(slug="claude-code"), name="desk")
    desk.run("login", "--url", server.url, "--token", desk_token.secret)

    throttled = cli.run("sync", "--budget", "5", "--json")
    other = desk.json("remember", "the desk machine writes on")
    still = cli.json("status")

    data = json.loads(throttled.stdout)
    assert throttled.returncode == 7 and data["throttled"] and data["pending"] > 0
    assert "still pending" in throttled.stderr and "throttled" in throttled.stderr
    assert other["state"] == "done"  # another machine's token has its own budget
    assert still["online"] is True  # and this machine's reads are not throttled
    assert {r["state"] for r in cli.spool_rows()} <= {"done", "pending"}  # nothing lost
