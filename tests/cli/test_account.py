"""Which account a command uses, and whether its token can work: ``login`` checks the token
with the server, ``--profile`` means the same before and after the command, ``doctor`` tells
the truth against a live server, healthy and down."""

from __future__ import annotations

import json

import pytest

from agents.models import Task
from agents.services.agents import agent_register, agent_token_issue
from memory.selectors import memory_counts
from tenants.models import User
from tenants.services.tokens import token_issue, token_revoke
from tests.cli.conftest import free_port, git_repo

pytestmark = pytest.mark.django_db(transaction=True)


def semantic(user: User) -> int:
    return memory_counts(user=user).get("semantic", 0)


def profiles(cli):
    return json.loads((cli.home / "atlas" / "config.json").read_text())


@pytest.fixture
def work(cli, server, bob):
    """A second profile, ``work``: bob's claude-code token on the same server."""
    agent = agent_register(user=bob, slug="claude-code").agent
    token = agent_token_issue(agent=agent, name="bob laptop").secret
    done = cli.run("--profile", "work", "login", "--url", server.url, "--token", token)
    assert done.returncode == 0, done.stderr
    return bob


def test_login_refuses_a_token_not_bound_to_an_agent_and_says_how_to_get_one(cli, server):
    unbound = token_issue(tenant=server.user.tenant, user=server.user, name="mcp").secret

    done = cli.run("--profile", "mcp", "login", "--url", server.url, "--token", unbound)

    assert done.returncode == 4, done.stderr
    assert "not bound to an agent" in done.stderr
    assert "Issue an agent-bound token" in done.stderr
    assert "/agents/claude-code/tokens" in done.stderr
    assert "mcp" not in profiles(cli)["profiles"]


def test_login_refuses_a_revoked_token_and_another_users_token(cli, server, bob):
    agent = agent_register(user=bob, slug="claude-code").agent
    bobs = agent_token_issue(agent=agent, name="bob laptop")
    token_revoke(token=bobs.token)
    other = agent_token_issue(agent=agent, name="bob desk").secret

    revoked = cli.run("--profile", "x", "login", "--url", server.url, "--token", bobs.secret)
    mismatch = cli.run(
        "--profile", "y", "login", "--url", server.url, "--user", "alice", "--token", other
    )

    assert revoked.returncode == 4 and "refused the token" in revoked.stderr
    assert mismatch.returncode == 4 and "acts for user 'bob'" in mismatch.stderr
    assert set(profiles(cli)["profiles"]) == {"default"}


def test_login_takes_the_user_and_agent_from_the_token(cli, server):
    saved = cli.json("--profile", "fresh", "login", "--url", server.url, "--token", server.token)

    assert (saved["user"], saved["agent"], saved["checked"]) == ("alice", "claude-code", True)
    assert profiles(cli)["profiles"]["fresh"]["user"] == "alice"


def test_login_with_the_server_down_saves_nothing_unless_told_not_to_check(cli, server):
    closed = f"http://127.0.0.1:{free_port()}"

    down = cli.run("--profile", "later", "login", "--url", closed, "--token", server.token)
    unchecked = cli.run(
        "--profile", "later", "login", "--url", closed, "--user", "alice",
        "--token", server.token, "--no-check",
    )  # fmt: skip

    assert down.returncode == 3 and "cannot check the token" in down.stderr
    assert unchecked.returncode == 0 and "not checked" in unchecked.stdout
    assert profiles(cli)["profiles"]["later"]["url"] == closed


def test_login_to_a_named_profile_leaves_the_default_profile_alone(cli, server, work):
    data = profiles(cli)

    assert data["default_profile"] == "default"
    assert data["profiles"]["default"]["user"] == "alice"
    assert data["profiles"]["work"]["user"] == "bob"
    token_files = {p.name: p.read_text() for p in (cli.home / "atlas" / "tokens").iterdir()}
    assert token_files["default"].strip() == server.token


@pytest.mark.parametrize("position", ["before", "after"])
def test_profile_before_or_after_the_command_writes_to_that_account(cli, server, work, position):
    def atlas(*args: str) -> tuple[int, str]:
        flag = ("--profile", "work")
        full = [*flag, *args] if position == "before" else [*args, *flag]
        done = cli.run(*full)
        return done.returncode, done.stdout + done.stderr

    remembered = atlas("remember", "The work VPN is wg-3")
    started = atlas("task", "start", "rotate the work keys")
    flag = ["--profile", "work"]
    status = cli.json(*([*flag, "status"] if position == "before" else ["status", *flag]))
    listed = atlas("task", "list")

    assert remembered[0] == 0 and started[0] == 0, (remembered, started)
    assert semantic(work) == 1 and semantic(server.user) == 0
    assert list(Task.objects.filter(user=work).values_list("title", "state")) == [
        ("rotate the work keys", "in_progress")
    ]
    assert not Task.objects.filter(user=server.user).exists()
    assert (status["profile"], status["user"]) == ("work", "bob")
    assert listed[0] == 0 and "rotate the work keys" in listed[1]
    assert (cli.home / "atlas" / "spool" / "work.db").exists()


def test_doctor_passes_against_a_healthy_server(cli, server, tmp_path):
    repo = git_repo(tmp_path / "shop", "git@github.com:acme/shop.git")
    assert cli.run("hooks", "install", cwd=repo).returncode == 0

    done = cli.run("doctor", "--json", cwd=repo)
    checks = {c["check"]: c for c in json.loads(done.stdout)["checks"]}

    assert done.returncode == 0, checks
    assert checks["server"]["ok"] and checks["token valid"]["ok"]
    assert checks["token bound to agent"]["ok"], checks
    assert "agent claude-code" in checks["token bound to agent"]["detail"]


def test_doctor_fails_and_says_why_when_the_server_is_down(cli, server):
    closed = f"http://127.0.0.1:{free_port()}"

    done = cli.run("doctor", ATLAS_URL=closed)

    assert done.returncode == 1
    assert "FAIL server" in done.stdout and "unreachable" in done.stdout
    assert "FAIL token valid: not checked: no server" in done.stdout


def test_doctor_names_a_token_that_is_not_bound(cli, server):
    unbound = token_issue(tenant=server.user.tenant, user=server.user, name="mcp").secret

    done = cli.run("doctor", ATLAS_TOKEN=unbound)

    assert done.returncode == 1
    assert "ok   server" in done.stdout
    assert "FAIL token bound to agent: this token of user 'alice' is not bound" in done.stdout
