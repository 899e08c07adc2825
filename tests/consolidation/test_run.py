"""A consolidation run on the embedded backend, with the real openai client talking to the fake
chat server on loopback: guards, supersession, playbook outcomes, failures, reruns."""

from __future__ import annotations

import dataclasses

import pytest

from consolidation.llm import ChatModelError
from consolidation.models import ConsolidationRun, ConsolidationState
from consolidation.services.run import consolidation_run
from consolidation.services.triggers import consolidation_request
from memory.services.common import backend
from memory.services.scoping import user_read_scope
from memory.services.writes import memory_write
from tenants.models import AuditEvent
from tests.consolidation.conftest import say
from tests.consolidation.fake_llm import Delay, Status, prompt_of

pytestmark = pytest.mark.usefixtures("store")


def consolidate(user, *, final_attempt=True):
    queued = consolidation_request(user=user, trigger="on_demand")
    return consolidation_run(run_id=queued.run.pk, final_attempt=final_attempt)


def memories(user, memory_type):
    return backend().scan(user_read_scope(user), memory_types=(memory_type,))


def fact(text, ids, **extra):
    return {"text": text, "fact_type": "preference", "confidence": 0.9,
            "supporting_episode_ids": ids, **extra}  # fmt: skip


def answer(facts=(), procedures=(), updates=()):
    return {"new_facts": list(facts), "new_procedures": list(procedures),
            "procedural_updates": list(updates)}  # fmt: skip


def test_facts_citing_the_window_are_written_and_others_dropped(alice, chat):
    tea, _ = say(alice, "I only drink green tea in the morning", "What's the weather like?")
    chat.script = [
        answer(
            facts=[
                fact("Alice drinks green tea in the morning", [tea.id]),
                fact("Alice owns a sailing boat", ["not-an-episode"]),
                fact("Alice likes jazz", []),
            ]
        )
    ]

    run = consolidate(alice)

    assert run.status == "done" and run.episodes_in == 2 and run.candidates == 3
    assert run.facts_written == 1 and run.unsupported_dropped == 2
    [written] = memories(alice, "semantic")
    assert written.text == "Alice drinks green tea in the morning"
    assert written.source == "consolidation" and written.supporting_episode_ids == [tea.id]
    assert written.metadata == {"consolidation_run": run.pk}
    event = AuditEvent.objects.get(action="memory.write", subject_user=alice)
    assert event.metadata["source"] == "consolidation" and event.actor_label == "consolidation"
    assert "green tea" not in str(event.metadata)


def test_a_runs_new_facts_and_playbooks_are_written_as_one_batch(alice, chat, monkeypatch):
    from memory.services import common, writes

    tea, fix = say(alice, "I only drink green tea", "Holding the reset button fixed the hub")
    steps = ["Hold the reset button for 10 seconds", "Re-pair in the app"]
    chat.script = [
        answer(
            facts=[
                fact("Alice drinks green tea", [tea.id]),
                fact("Alice has a smart home hub", [fix.id]),
                fact("Alice fixes her own devices", [fix.id]),
            ],
            procedures=[
                {"name": "Hub reset", "trigger": "hub offline", "steps": steps,
                 "supporting_episode_ids": [fix.id], "confidence": 0.9},
            ],
        )
    ]  # fmt: skip
    calls: list[int] = []
    stored: list[int] = []
    real_embedder, store = common.embedder, type(backend())
    real_create = store.create

    class Counted:
        def __init__(self) -> None:
            self.model = real_embedder()

        def embed(self, texts):
            calls.append(len(texts))
            return self.model.embed(texts)

        def embed_one(self, text):
            calls.append(1)
            return self.model.embed_one(text)

    def create(self, docs):
        stored.append(len(docs))
        return real_create(self, docs)

    monkeypatch.setattr(writes, "embedder", Counted)
    monkeypatch.setattr(store, "create", create)
    run = consolidate(alice)
    monkeypatch.undo()

    assert run.status == "done" and run.facts_written == 3 and run.procedures_written == 1
    assert calls == [4] and stored == [4]  # one model call, one store write
    assert len(memories(alice, "semantic")) == 3 and len(memories(alice, "procedural")) == 1
    writes_audited = AuditEvent.objects.filter(action="memory.write", subject_user=alice)
    assert writes_audited.count() == 4


def test_the_model_is_asked_with_the_window_and_known_facts(alice, chat):
    known = memory_write(user=alice, text="Alice is vegetarian", memory_type="semantic")
    episode, *_ = say(alice, "I am vegetarian and I cook lentils a lot")
    chat.script = [answer()]

    consolidate(alice)

    [request] = chat.requests
    assert request["path"] == "/v1/chat/completions" and request["model"] == "test-consolidator"
    assert request["response_format"] == {"type": "json_object"}
    sent = prompt_of(request)
    assert [e["id"] for e in sent["episodes"]] == [episode.id]
    assert known.id in [f["id"] for f in sent["current_facts"]]


def test_a_candidate_below_the_confidence_floor_is_dropped(alice, chat):
    alice.tenant.consolidation_confidence_floor = 0.8
    alice.tenant.save()
    [ep] = say(alice, "I think I might like opera")
    chat.script = [answer(facts=[fact("Alice might like opera", [ep.id], confidence=0.5)])]

    run = consolidate(alice)

    assert run.low_confidence_dropped == 1 and run.facts_written == 0
    assert memories(alice, "semantic") == []


def test_a_near_duplicate_of_an_existing_fact_is_dropped(alice, chat):
    memory_write(user=alice, text="Alice is allergic to peanuts", memory_type="semantic")
    [ep] = say(alice, "Remember, I'm allergic to peanuts. Also I play the cello.")
    chat.script = [
        answer(
            facts=[
                fact("Alice is allergic to peanuts.", [ep.id]),
                fact("Alice plays the cello", [ep.id]),
                fact("Alice plays the cello.", [ep.id]),  # a duplicate within the answer
            ]
        )
    ]

    run = consolidate(alice)

    assert run.duplicates_dropped == 2 and run.facts_written == 1
    texts = sorted(d.text for d in memories(alice, "semantic"))
    assert texts == ["Alice is allergic to peanuts", "Alice plays the cello"]


def test_supersession_natural_and_harsh_marks_the_old_facts(alice, chat):
    lyon = memory_write(user=alice, text="Alice lives in Lyon", memory_type="semantic")
    blue = memory_write(user=alice, text="Alice's favourite colour is blue", memory_type="semantic")
    moved, wrong = say(
        alice,
        "I moved from Lyon to Berlin last month",
        "My favourite colour was never blue, it is green!",
    )
    chat.script = [
        answer(
            facts=[
                fact("Alice lives in Berlin", [moved.id], supersedes=[lyon.id],
                     contradiction="natural"),
                fact("Alice's favourite colour is green", [wrong.id], supersedes=[blue.id],
                     contradiction="harsh", confidence=0.9),
            ]
        )
    ]  # fmt: skip

    run = consolidate(alice)

    assert run.facts_written == 2 and run.supersessions == 2
    by_text = {d.text: d for d in memories(alice, "semantic")}
    berlin, green = by_text["Alice lives in Berlin"], by_text["Alice's favourite colour is green"]
    assert by_text["Alice lives in Lyon"].superseded_by == berlin.id
    assert by_text["Alice's favourite colour is blue"].superseded_by == green.id
    assert berlin.contradiction == "natural" and berlin.confidence == 0.9
    assert green.contradiction == "harsh" and green.confidence == pytest.approx(0.8)
    assert AuditEvent.objects.filter(action="memory.supersede", subject_user=alice).count() == 2


def test_only_facts_the_run_saw_may_be_superseded(alice, bob, chat):
    bobs = memory_write(user=bob, text="Bob lives in Oslo", memory_type="semantic")
    [ep] = say(alice, "I live in Madrid now")
    chat.script = [answer(facts=[fact("Alice lives in Madrid", [ep.id], supersedes=[bobs.id])])]

    run = consolidate(alice)

    assert run.unsupported_dropped == 1 and run.facts_written == 0
    assert memories(bob, "semantic")[0].superseded_by is None


def playbook(user, name, steps):
    return memory_write(
        user=user,
        text=f"{name}: " + " ".join(steps),
        memory_type="procedural",
        name=name,
        trigger=name,
        steps=steps,
    )


def test_playbook_success_and_failure_with_refined_steps(alice, chat):
    zigbee = playbook(alice, "Zigbee bulbs drop off the hub", ["Power-cycle the hub"])
    wifi = playbook(alice, "Camera loses wifi", ["Move the router closer"])
    first, second = say(
        alice,
        "thanks, power-cycling the hub fixed my zigbee bulbs",
        "moving the router didn't help the camera wifi; a 2.4 GHz-only SSID did",
    )
    chat.script = [
        answer(
            updates=[
                {"procedure_id": zigbee.id, "outcome": "success",
                 "supporting_episode_ids": [first.id]},
                {"procedure_id": wifi.id, "outcome": "failure",
                 "refined_steps": ["Create a 2.4 GHz-only SSID", "Rejoin the camera"],
                 "supporting_episode_ids": [second.id]},
                {"procedure_id": "unknown-playbook", "outcome": "success"},
            ]
        )
    ]  # fmt: skip

    run = consolidate(alice)

    assert run.procedures_updated == 2 and run.unsupported_dropped == 1
    current = {d.id: d for d in memories(alice, "procedural")}
    assert current[zigbee.id].success_count == 1 and current[zigbee.id].failure_count == 0
    assert current[wifi.id].failure_count == 1 and current[wifi.id].version == 2
    assert [s["instruction"] for s in current[wifi.id].steps] == [
        "Create a 2.4 GHz-only SSID",
        "Rejoin the camera",
    ]
    outcomes = AuditEvent.objects.filter(action="procedure.outcome", subject_user=alice)
    assert {e.metadata["source"] for e in outcomes} == {"consolidation"}


def test_a_new_playbook_needs_high_confidence(alice, chat):
    [ep] = say(alice, "Resetting the thermostat: hold the button 10 s, then re-pair it. Worked!")
    steps = ["Hold the button for 10 seconds", "Re-pair in the app"]
    chat.script = [
        answer(
            procedures=[
                {"name": "Thermostat reset", "trigger": "thermostat unresponsive",
                 "steps": steps, "supporting_episode_ids": [ep.id], "confidence": 0.9},
                {"name": "Doorbell chime", "trigger": "chime silent",
                 "steps": ["Check the fuse"], "supporting_episode_ids": [ep.id],
                 "confidence": 0.7},
            ]
        )
    ]  # fmt: skip

    run = consolidate(alice)

    assert run.procedures_written == 1 and run.low_confidence_dropped == 1
    [written] = memories(alice, "procedural")
    assert written.name == "Thermostat reset" and written.source == "consolidation"
    assert [s["instruction"] for s in written.steps] == steps


def test_malformed_json_is_asked_again_then_the_run_fails_with_nothing_written(alice, chat):
    [ep] = say(alice, "I love hiking in the Alps")
    chat.script = ["this is not json", {"new_facts": "not a list"}]

    run = consolidate(alice)

    assert len(chat.requests) == 2  # asked twice (ATLAS_CONSOLIDATION_JSON_ATTEMPTS)
    retry = chat.requests[1]["messages"]
    assert retry[-2] == {"role": "assistant", "content": "this is not json"}
    assert "not the JSON object" in retry[-1]["content"]
    assert run.status == "failed" and "malformed" in run.error
    assert run.model_calls == 2 and run.prompt_tokens > 0
    assert memories(alice, "semantic") == [] and memories(alice, "procedural") == []
    state = ConsolidationState.objects.get(user=alice)
    assert state.watermark_episode_id == "" and state.lease_until is None
    # The same window is read again next time, and this time the answer is good.
    chat.script = [answer(facts=[fact("Alice loves hiking in the Alps", [ep.id])])]
    again = consolidate(alice)
    assert again.status == "done" and again.episodes_in == 1 and again.facts_written == 1


def test_a_timeout_is_retried_by_the_client_then_fails_the_run(alice, chat, settings):
    settings.ATLAS_CHAT_MODEL = dataclasses.replace(settings.ATLAS_CHAT_MODEL, timeout_s=0.5)
    say(alice, "I collect vinyl records")
    chat.script = [Delay(3), Delay(3)]

    run = consolidate(alice)

    assert len(chat.requests) == 2  # the first try and one client retry
    assert run.status == "failed" and "timed out" in run.error
    assert ConsolidationState.objects.get(user=alice).watermark_episode_id == ""


def test_a_transient_failure_before_the_last_attempt_requeues_the_run(alice, chat):
    say(alice, "I collect vinyl records")
    chat.script = [Status(503), Status(503)]

    with pytest.raises(ChatModelError):
        consolidate(alice, final_attempt=False)

    run = ConsolidationRun.objects.get(user=alice)
    assert run.status == "queued" and "503" in run.error
    assert ConsolidationState.objects.get(user=alice).lease_until is None


def test_a_rerun_after_success_writes_nothing_new(alice, chat):
    [ep] = say(alice, "My daughter is called Mia")
    reply = answer(facts=[fact("Alice's daughter is called Mia", [ep.id])])
    chat.script = [reply]
    first = consolidate(alice)

    chat.script = [reply]
    second = consolidate(alice)

    assert first.facts_written == 1
    assert second.status == "done" and second.episodes_in == 0 and second.facts_written == 0
    assert len(chat.requests) == 1  # nothing new since the watermark: no model call
    assert len(memories(alice, "semantic")) == 1
    state = ConsolidationState.objects.get(user=alice)
    assert state.watermark_episode_id == ep.id and state.pending_episodes == 0


def test_a_rerun_of_the_same_window_does_not_duplicate(alice, chat):
    """Should the watermark not have moved (a crash after the writes), the window is read again
    and the duplicate guard keeps the facts from being written twice."""
    [ep] = say(alice, "My daughter is called Mia")
    reply = answer(facts=[fact("Alice's daughter is called Mia", [ep.id])])
    chat.script = [reply, reply]
    consolidate(alice)
    ConsolidationState.objects.filter(user=alice).update(
        watermark_created_at=None, watermark_episode_id=""
    )

    again = consolidate(alice)

    assert again.episodes_in == 1 and again.duplicates_dropped == 1
    assert len(memories(alice, "semantic")) == 1


def test_the_window_holds_at_most_30_episodes_oldest_first(alice, chat, settings):
    settings.ATLAS_CONSOLIDATION_WINDOW = 3
    episodes = say(alice, "one", "two", "three", "four")
    chat.script = [answer(), answer()]

    first = consolidate(alice)

    assert first.window_episode_ids == [e.id for e in episodes[:3]]
    second = consolidate(alice)
    assert second.window_episode_ids == [episodes[3].id]
    assert [e["id"] for e in prompt_of(chat.requests[1])["context_episodes"]] == [
        e.id for e in episodes[:3]
    ]


def test_token_use_is_recorded_on_the_run(alice, chat):
    say(alice, "I have two cats")
    chat.script = [answer()]

    run = consolidate(alice)

    request = chat.requests[0]
    prompt = "".join(m["content"] for m in request["messages"])
    assert run.prompt_tokens == len(prompt) // 4 and run.completion_tokens > 0
    assert run.tokens_used == run.prompt_tokens + run.completion_tokens
    assert run.duration_ms is not None and run.model == "test-consolidator"
