"""The session brief (the handoff): composed once from the records, about one project, within
its token budget at item boundaries, each item once; decisions with their reasons, paths
relative to the project, the last session with work in it and its true state; narration off
unless a model is configured (then accounted)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from agents.models import Session
from agents.services.agents import presence_heartbeat
from agents.services.messages import message_send
from agents.services.notes import agent_memory_write
from agents.services.sessions import session_end, session_start, session_touch
from agents.services.tasks import task_create
from atlas_platform.exceptions import Conflict, ValidationError
from knowledge.models import HandoffNarration
from knowledge.services.handoff import SECTIONS, handoff_build, tokens
from memory.services.writes import memory_write
from tenants.models import AuditEvent
from tests.agents.conftest import register
from tests.knowledge.conftest import fm, project_of, writer

pytestmark = [pytest.mark.django_db, pytest.mark.services]

REASON = "We chose CSV because the finance team's spreadsheet tools read it without a plugin."


@pytest.fixture
def work(alice, store):
    project = project_of(alice)
    shop = project_of(alice, remote="git@github.com:acme/shop.git")
    note = writer(alice, project)
    note("docs/a.md", fm(id="a", status="blocked", blocked_by="b", body="Ship the export.\n"))
    note("docs/b.md", fm(id="b", status="open", body="Legal sign-off.\n"))
    note(
        "docs/decisions/use-csv.md",
        fm(type="decision", status="accepted", body=f"# Use CSV\n\n{REASON}\n\nMore later.\n"),
    )
    note("docs/plans/old.md", fm(type="plan", status="done", body="# Old plan\n\nFinished.\n"))
    laptop, desktop = register(alice), register(alice, "codex")
    presence_heartbeat(agent=desktop, machine_key="desktop", label="bob-desktop")
    presence_heartbeat(agent=laptop, machine_key="laptop")
    session_start(
        agent=desktop, session_id="s-desk", project_key=project.key, machine_key="desktop"
    )
    session_touch(
        agent=desktop,
        session_id="s-desk",
        turns=3,
        files=["/home/bob/src/app/docs/a.md", "src/export.py"],
    )
    silent = timezone.now() - timedelta(hours=2)  # nothing from the desktop since
    Session.objects.filter(external_id="s-desk").update(last_activity_at=silent)
    session_start(agent=laptop, session_id="s-idle", project_key=project.key, machine_key="laptop")
    task_create(
        user=alice,
        agent=desktop,
        title="Wire the export button",
        description="The button sits in the toolbar.",
        project_key=project.key,
    )
    message_send(sender=desktop, to_agent="claude-code", body="Legal is on holiday until May.")
    agent_memory_write(
        agent=desktop, text="The export file carries a UTF-8 BOM.", project_key=project.key
    )
    agent_memory_write(agent=desktop, text=REASON, project_key=project.key)  # says it twice
    agent_memory_write(agent=desktop, text="Shop export prices are in cents.", project_key=shop.key)
    memory_write(user=alice, text="Alice exports her tea log weekly.", memory_type="semantic")
    return project, laptop


def brief_of(alice, project, laptop, **kw):
    return handoff_build(
        user=alice, project_key=project.key, agent=laptop, machine_key="laptop", **kw
    )


def test_the_brief_holds_every_section_and_is_the_same_twice(alice, work):
    project, laptop = work
    one, two = brief_of(alice, project, laptop), brief_of(alice, project, laptop)
    assert one.markdown == two.markdown and one.sections == two.sections
    sections = one.sections
    assert [b["key"] for b in sections["active_blockers"]] == ["a"]
    assert [t["title"] for t in sections["open_tasks"]] == ["Wire the export button"]
    assert "toolbar" in one.markdown  # a task's detail
    assert [m["body"] for m in sections["unread_messages"]] == ["Legal is on holiday until May."]
    assert one.markdown.startswith("# Atlas brief: app\n")
    assert f"Project key {project.key}" in one.markdown  # what the graph tools take
    assert not one.truncated and one.tokens_used == tokens(one.markdown) <= 1500
    assert one.token_budget == 1500  # ATLAS_BRIEF_TOKENS


def test_decisions_come_with_their_reason_and_closed_plans_stay_out(alice, work):
    project, laptop = work
    brief = brief_of(alice, project, laptop)
    [decision] = brief.sections["decisions"]
    assert decision["key"] == "decision:docs-decisions-use-csv"
    assert decision["reason"] == REASON
    assert REASON in brief.markdown
    decisions = brief.markdown.split("## Decisions and plans (why)\n")[1].split("\n\n")[0]
    assert "Old plan" not in decisions  # done: a recent change at most


def test_memories_are_the_projects_own_and_never_repeat_a_decision(alice, work):
    project, laptop = work
    brief = brief_of(alice, project, laptop)
    assert [m["text"] for m in brief.sections["memories"]] == [
        "The export file carries a UTF-8 BOM."
    ]
    assert "cents" not in brief.markdown  # another project's memory
    assert "tea log" not in brief.markdown  # a memory written from no project
    assert brief.markdown.count("spreadsheet tools") == 1  # the decision's, once


def test_each_record_is_shown_once(alice, work):
    project, laptop = work
    brief = brief_of(alice, project, laptop, hours=72)
    refs = [item["ref"] for name in SECTIONS for item in brief.sections[name]]
    assert len(refs) == len(set(refs))
    # a is a blocker's line, b is named there (its blocker): neither is a recent change again
    assert "entity:a" in refs and "entity:b" not in refs
    assert "docs/b.md" in brief.markdown
    item_lines = [line for line in brief.markdown.splitlines() if line.startswith("- ")]
    assert len(item_lines) == len(set(item_lines)) == len(refs)


def test_the_last_session_is_the_last_with_work_in_it_with_its_true_state(alice, work):
    project, laptop = work
    [session] = brief_of(alice, project, laptop).sections["last_session"]
    assert session["session_id"] == "s-desk"  # not the later one without a turn
    assert session["state"].startswith("no end recorded, last active ")
    assert session["files"] == ["docs/a.md", "src/export.py"]  # relative to the project
    brief = brief_of(alice, project, laptop)
    assert "/home/bob" not in brief.markdown and "on desktop (bob-desktop)" in brief.markdown
    session_end(agent=register(alice, "codex"), session_id="s-desk", reason="user_exit")
    [ended] = brief_of(alice, project, laptop).sections["last_session"]
    assert ended["state"].startswith("ended ") and "(user_exit)" in ended["state"]
    # The desktop's own session is "this machine" there; the session starting is never shown.
    here = handoff_build(user=alice, project_key=project.key, machine_key="desktop")
    assert "on this machine" in here.markdown
    assert (
        handoff_build(user=alice, project_key=project.key, session_id="s-desk").sections[
            "last_session"
        ]
        == []
    )


@pytest.mark.parametrize("budget", [100, 150, 250, 400, 700])
def test_a_budget_is_met_with_whole_items_most_important_first(alice, work, budget):
    project, laptop = work
    full = brief_of(alice, project, laptop, token_budget=32_000)
    small = brief_of(alice, project, laptop, token_budget=budget)
    assert small.tokens_used == tokens(small.markdown) <= budget
    assert small.truncated == any(small.omitted.values())
    whole = set(full.markdown.splitlines())
    assert set(small.markdown.splitlines()) <= whole  # whole lines of the full brief only
    if small.truncated:
        assert small.tokens_used < full.tokens_used
    # Most important first: the blocker before any memory, the header always.
    assert small.sections["active_blockers"] == full.sections["active_blockers"]
    if small.sections["memories"]:
        assert small.sections["open_tasks"] == full.sections["open_tasks"]


def test_the_smallest_budget_keeps_the_header_and_the_first_blocker(alice, work):
    project, laptop = work
    small = brief_of(alice, project, laptop, token_budget=100)
    assert small.truncated and small.sections["memories"] == []
    assert small.markdown.splitlines()[:2] == [
        "# Atlas brief: app",
        f'Project key {project.key} (the graph tools take it, the name, or "current").',
    ]
    with pytest.raises(ValidationError):
        brief_of(alice, project, laptop, token_budget=99)


def test_a_long_item_is_shortened_at_a_word_never_mid_word(alice, work):
    project, laptop = work
    long_text = " ".join(f"export{n:03d}" for n in range(200))
    agent_memory_write(agent=register(alice, "codex"), text=long_text, project_key=project.key)
    brief = brief_of(alice, project, laptop, token_budget=4000)
    [line] = [x for x in brief.markdown.splitlines() if "export000" in x]
    shown = line.removeprefix("- ").removesuffix("…")
    assert line.endswith("…") and long_text.startswith(shown)
    assert long_text[len(shown)] == " "  # the cut fell between two words


def test_narration_is_off_without_a_model(alice, work):
    project, _ = work
    with pytest.raises(Conflict) as caught:
        handoff_build(user=alice, project_key=project.key, narrate=True)
    assert caught.value.code == "narration_unavailable"
    assert handoff_build(user=alice, project_key=project.key).narration is None


def test_narration_by_the_configured_model_is_accounted(alice, work, chat):
    project, _ = work
    chat.script.append({"narration": "Export waits on legal; wire the button meanwhile."})
    brief = handoff_build(user=alice, project_key=project.key, narrate=True)
    assert brief.narration == "Export waits on legal; wire the button meanwhile."
    row = HandoffNarration.objects.get(user=alice)
    assert row.prompt_tokens > 0 and row.completion_tokens > 0
    event = AuditEvent.objects.get(action="handoff.narrate")
    assert "legal" not in str(event.metadata).lower()
    assert "Wire the export button" in chat.requests[-1]["messages"][-1]["content"]


def test_on_every_backend_the_brief_recalls_only_memories_of_its_project(people):
    alice = people.alice
    app, shop = project_of(alice), project_of(alice, remote="git@github.com:acme/shop.git")
    agent = register(alice)
    agent_memory_write(agent=agent, text="App releases are tagged vYYYY.MM.", project_key=app.key)
    agent_memory_write(agent=agent, text="Shop releases are tagged app-like.", project_key=shop.key)
    memory_write(user=alice, text="App releases make Alice nervous.", memory_type="semantic")
    memory_write(
        user=people.bob, text="App releases are Bob's.", memory_type="semantic", project=app.key
    )
    brief = handoff_build(user=alice, project_key=app.key)
    assert [m["text"] for m in brief.sections["memories"]] == ["App releases are tagged vYYYY.MM."]
