"""Messages between agents of one tenant: send, inbox, acknowledge, reply in the thread."""

from __future__ import annotations

import pytest

from agents.models import Message
from agents.selectors import inbox, inbox_message
from agents.services.messages import message_ack, message_reply, message_send
from atlas_platform.exceptions import NotFound, ValidationError
from tenants.models import AuditEvent

pytestmark = pytest.mark.django_db


def test_a_message_reaches_the_recipients_inbox_unread(alice_agent, bob_agent):
    sent = message_send(
        sender=alice_agent,
        to_user="bob",
        to_agent="claude-code",
        kind="question",
        priority="high",
        subject="Deploy?",
        body="Is the deploy blocked?",
        tags=["deploy"],
    )

    assert [m.pk for m in inbox(agent=bob_agent, unread_only=True)] == [sent.pk]
    assert inbox(agent=alice_agent) == []


def test_an_ack_marks_it_read_once(alice_agent, bob_agent):
    sent = message_send(sender=alice_agent, to_user="bob", to_agent="claude-code", body="hi")

    first = message_ack(agent=bob_agent, message_id=sent.pk)
    again = message_ack(agent=bob_agent, message_id=sent.pk)

    assert first.acknowledged_at is not None and again.acknowledged_at == first.acknowledged_at
    assert inbox(agent=bob_agent, unread_only=True) == []
    assert AuditEvent.objects.filter(action="message.ack").count() == 1


def test_a_reply_goes_to_the_sender_in_the_same_thread(alice_agent, bob_agent):
    sent = message_send(
        sender=alice_agent, to_user="bob", to_agent="claude-code", subject="Deploy?", body="?"
    )

    reply = message_reply(agent=bob_agent, message_id=sent.pk, body="Not blocked.")

    assert (reply.recipient, reply.thread, reply.reply_to) == (alice_agent, sent.thread, sent)
    assert (reply.subject, reply.kind) == ("Re: Deploy?", "answer")
    assert [m.pk for m in inbox(agent=alice_agent)] == [reply.pk]


def test_only_the_recipient_reads_acks_or_replies(alice_agent, alice_codex, bob_agent):
    sent = message_send(sender=alice_agent, to_user="bob", to_agent="claude-code", body="hi")

    for agent in (alice_agent, alice_codex):
        with pytest.raises(NotFound):
            inbox_message(agent=agent, message_id=sent.pk)
        with pytest.raises(NotFound):
            message_ack(agent=agent, message_id=sent.pk)
        with pytest.raises(NotFound):
            message_reply(agent=agent, message_id=sent.pk, body="mine now")
    assert Message.objects.get().acknowledged_at is None


def test_another_tenants_agent_looks_like_a_missing_one(alice_agent, charlie_agent):
    with pytest.raises(NotFound) as theirs:
        message_send(sender=alice_agent, to_user="charlie", to_agent="claude-code", body="hi")
    with pytest.raises(NotFound) as nobody:
        message_send(sender=alice_agent, to_user="nobody", to_agent="claude-code", body="hi")

    assert theirs.value.code == nobody.value.code == "agent_not_found"
    assert Message.objects.count() == 0


def test_bad_messages_are_refused_and_nothing_is_sent(alice_agent, bob, settings):
    settings.ATLAS_MESSAGE_MAX_CHARS = 10
    for bad in (
        {"body": "x" * 11},
        {"body": "   "},
        {"body": "ok", "kind": "shout"},
        {"body": "ok", "tags": [""]},
    ):
        with pytest.raises(ValidationError):
            message_send(sender=alice_agent, to_agent="claude-code", **bad)
    with pytest.raises(ValidationError):
        message_send(sender=alice_agent, to_agent="Not A Slug!", body="ok")
    with pytest.raises(NotFound):  # another user's agents are never made up
        message_send(sender=alice_agent, to_user="bob", to_agent="no-such-agent", body="ok")

    assert Message.objects.count() == 0


def test_the_audit_keeps_ids_never_text(alice_agent, bob_agent):
    sent = message_send(
        sender=alice_agent,
        to_user="bob",
        to_agent="claude-code",
        subject="Secret plan",
        body="The launch code is 0000",
    )
    message_reply(agent=bob_agent, message_id=sent.pk, body="Burn after reading")

    for event in AuditEvent.objects.filter(action="message.send"):
        text = str(event.metadata)
        assert "Secret" not in text and "0000" not in text and "Burn" not in text
        assert event.metadata["thread"] == sent.thread


def test_a_message_to_an_own_agent_not_registered_yet_waits_in_its_inbox(alice, alice_agent):
    sent = message_send(sender=alice_agent, to_agent="codex", body="the build is yours")
    codex = alice.agents.get(slug="codex")

    assert sent.recipient == codex
    assert [m.body for m in inbox(agent=codex, unread_only=True)] == ["the build is yours"]


def test_a_bad_message_to_an_unregistered_agent_registers_nothing(alice, alice_agent):
    with pytest.raises(ValidationError):
        message_send(sender=alice_agent, to_agent="codex", body="   ")
    with pytest.raises(ValidationError):
        message_send(sender=alice_agent, to_agent="codex", body="x", kind="shouting")

    assert not alice.agents.filter(slug="codex").exists()
