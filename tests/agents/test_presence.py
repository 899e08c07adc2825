"""Presence: one row per agent and machine, status from the heartbeat's age in server time."""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

import pytest
from django.utils import timezone

from agents.models import Machine, Presence
from agents.services.agents import presence_heartbeat
from agents.services.sessions import session_end, session_start
from tenants.models import AuditEvent
from tests.agents.conftest import register

pytestmark = pytest.mark.django_db


def later(seconds: float) -> mock._patch:  # type: ignore[type-arg]
    moment = timezone.now() + timedelta(seconds=seconds)
    return mock.patch("django.utils.timezone.now", return_value=moment)


def test_two_machines_of_one_agent_keep_two_presence_rows(alice_agent):
    session_start(agent=alice_agent, session_id="s-desk")
    session_start(agent=alice_agent, session_id="s-laptop")

    for _ in range(3):
        presence_heartbeat(agent=alice_agent, machine_key="desk", label="Desk", session_id="s-desk")
        presence_heartbeat(agent=alice_agent, machine_key="laptop", session_id="s-laptop")

    rows = Presence.objects.filter(agent=alice_agent).order_by("machine__key")
    assert [(p.machine.key, p.heartbeats, p.session and p.session.external_id) for p in rows] == [
        ("desk", 3, "s-desk"),
        ("laptop", 3, "s-laptop"),
    ]
    assert Machine.objects.filter(user=alice_agent.user).count() == 2
    assert {p.status() for p in rows} == {"active"}


def test_status_moves_to_idle_then_offline_with_age(alice_agent, settings):
    settings.ATLAS_PRESENCE_IDLE_S = 120
    settings.ATLAS_PRESENCE_OFFLINE_S = 900
    session_start(agent=alice_agent, session_id="s1")
    presence = presence_heartbeat(agent=alice_agent, machine_key="desk", session_id="s1")

    with later(60):
        assert presence.status(timezone.now()) == "active"
    with later(121):
        assert presence.status(timezone.now()) == "idle"
    with later(901):
        assert presence.status(timezone.now()) == "offline"


def test_the_heartbeat_is_stamped_in_server_time(alice_agent):
    with later(3600):
        presence = presence_heartbeat(agent=alice_agent, machine_key="desk")
        expected = timezone.now()

    assert presence.last_heartbeat_at == expected


def test_a_session_end_marks_its_presence_idle(alice_agent):
    session_start(agent=alice_agent, session_id="s1")
    presence_heartbeat(agent=alice_agent, machine_key="desk", session_id="s1")

    session_end(agent=alice_agent, session_id="s1", reason="completed")

    assert Presence.objects.get(agent=alice_agent).status() == "idle"


def test_heartbeats_update_in_place_and_only_the_first_is_audited(alice_agent):
    before = AuditEvent.objects.count()

    for _ in range(20):
        presence_heartbeat(agent=alice_agent, machine_key="desk")

    assert Presence.objects.get(agent=alice_agent).heartbeats == 20
    assert Presence.objects.count() == 1
    actions = list(AuditEvent.objects.order_by("id").values_list("action", flat=True)[before:])
    assert actions == ["machine.register", "presence.start"]


def test_two_agents_on_one_machine_share_the_machine_row(alice_agent, alice_codex):
    presence_heartbeat(agent=alice_agent, machine_key="desk")
    presence_heartbeat(agent=alice_codex, machine_key="desk", label="Desk")

    assert Machine.objects.filter(user=alice_agent.user).count() == 1
    assert Presence.objects.filter(machine__key="desk").count() == 2
    assert Machine.objects.get(key="desk").label == "Desk"


def test_a_heartbeat_cannot_name_another_users_session_or_task(alice_agent, bob):
    from agents.services.tasks import task_create
    from atlas_platform.exceptions import NotFound

    bobs = register(bob)
    session_start(agent=bobs, session_id="bob-s")
    task = task_create(user=bob, agent=bobs, title="Bob's")

    with pytest.raises(NotFound):
        presence_heartbeat(agent=alice_agent, machine_key="desk", session_id="bob-s")
    with pytest.raises(NotFound):
        presence_heartbeat(agent=alice_agent, machine_key="desk", task_id=task.pk)
    assert not Presence.objects.filter(agent=alice_agent).exists()


def test_an_oversize_machine_label_is_refused_before_anything_is_written(alice_agent):
    from atlas_platform.exceptions import ValidationError

    presence_heartbeat(agent=alice_agent, machine_key="desk", label="Desk")

    with pytest.raises(ValidationError):
        presence_heartbeat(agent=alice_agent, machine_key="desk", label="x" * 201)
    with pytest.raises(ValidationError):
        presence_heartbeat(agent=alice_agent, machine_key="new", os="y" * 101)

    assert list(Machine.objects.values_list("key", "label")) == [("desk", "Desk")]
    assert Presence.objects.get().heartbeats == 1
