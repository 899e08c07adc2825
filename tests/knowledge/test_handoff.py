"""The handoff brief: its sections from the records, deterministic, within its token budget,
and narration off unless a model is configured (then accounted, and the text from the model
the fake chat server plays)."""

from __future__ import annotations

import pytest

from agents.services.agents import presence_heartbeat
from agents.services.messages import message_send
from agents.services.sessions import session_start, session_touch
from agents.services.tasks import task_create
from atlas_platform.exceptions import Conflict
from knowledge.models import HandoffNarration
from knowledge.services.handoff import handoff_build, tokens
from memory.services.writes import memory_write
from tenants.models import AuditEvent
from tests.agents.conftest import register
from tests.knowledge.conftest import fm, project_of, writer

pytestmark = [pytest.mark.django_db, pytest.mark.services]


@pytest.fixture
def work(alice, store):
    project = project_of(alice)
    note = writer(alice, project)
    note("docs/a.md", fm(id="a", status="blocked", blocked_by="b", body="Ship the export.\n"))
    note("docs/b.md", fm(id="b", status="open", body="Legal sign-off.\n"))
    laptop, desktop = register(alice), register(alice, "codex")
    presence_heartbeat(agent=desktop, machine_key="desktop")
    session_start(
        agent=desktop, session_id="s-desk", project_key=project.key, machine_key="desktop"
    )
    session_touch(agent=desktop, session_id="s-desk", files=["docs/a.md"])
    task_create(user=alice, agent=desktop, title="Wire the export button", project_key=project.key)
    message_send(sender=desktop, to_agent="claude-code", body="Legal is on holiday until May.")
    memory_write(
        user=alice, text="The export format is CSV with a UTF-8 BOM.", memory_type="semantic"
    )
    return project, laptop


def test_the_brief_holds_every_section_and_is_the_same_twice(alice, work):
    project, laptop = work
    one = handoff_build(user=alice, project_key=project.key, agent=laptop, machine_key="laptop")
    two = handoff_build(user=alice, project_key=project.key, agent=laptop, machine_key="laptop")
    assert one.markdown == two.markdown and one.sections == two.sections
    sections = one.sections
    assert [b["key"] for b in sections["active_blockers"]] == ["a"]
    assert [t["title"] for t in sections["open_tasks"]] == ["Wire the export button"]
    assert [m["body"] for m in sections["unread_messages"]] == ["Legal is on holiday until May."]
    assert sections["last_session_elsewhere"][0]["machine"] == "desktop"
    assert sections["last_session_elsewhere"][0]["files"] == ["docs/a.md"]
    assert {c["key"] for c in sections["recent_changes"]} == {"a", "b"}
    assert "CSV" in sections["memories"][0]["text"]
    assert one.markdown.startswith("# Handoff: app\n") and not one.truncated
    assert one.tokens_used == tokens(one.markdown) <= one.token_budget
    # The same machine's own session is not "elsewhere"; no agent, no inbox.
    here = handoff_build(user=alice, project_key=project.key, machine_key="desktop")
    assert here.sections["last_session_elsewhere"] == [] and here.sections["unread_messages"] == []


def test_a_small_budget_cuts_the_least_important_sections_first(alice, work):
    project, laptop = work
    full = handoff_build(user=alice, project_key=project.key, agent=laptop)
    small = handoff_build(user=alice, project_key=project.key, agent=laptop, token_budget=100)
    assert small.truncated and small.tokens_used <= 100 < full.tokens_used
    assert small.sections["active_blockers"] == full.sections["active_blockers"]
    assert small.sections["memories"] == []


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
