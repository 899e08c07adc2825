"""Parsing the model's answer: strict shape, or MalformedOutput."""

from __future__ import annotations

import json

import pytest

from consolidation.prompt import MalformedOutput, parse_answer


def test_a_well_formed_answer_becomes_candidates():
    text = json.dumps(
        {
            "new_facts": [
                {"text": " Alice lives in Berlin ", "fact_type": "identity", "confidence": 0.9,
                 "supporting_episode_ids": ["e1", "e1"], "supersedes_id": "f1"}
            ],
            "new_procedures": [
                {"name": "Reset", "trigger": "stuck", "steps": [{"instruction": "Hold 10 s"}],
                 "supporting_episode_ids": ["e2"], "confidence": 0.85}
            ],
            "procedural_updates": [{"procedure_id": "p1", "outcome": "failure",
                                    "refined_steps": ["Do X"]}],
        }
    )  # fmt: skip

    answer = parse_answer(f"```json\n{text}\n```")

    [fact] = answer.facts
    assert fact.text == "Alice lives in Berlin" and fact.supporting_episode_ids == ["e1"]
    assert fact.supersedes == ["f1"] and fact.contradiction == "natural"
    assert answer.procedures[0].steps == ["Hold 10 s"]
    assert answer.updates[0].success is False and answer.updates[0].refined_steps == ["Do X"]


def test_missing_lists_mean_nothing_to_write():
    assert parse_answer("{}").size == 0


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not json",
        "[]",
        '{"new_facts": {}}',
        '{"new_facts": [{"text": ""}]}',
        '{"new_facts": [{"text": "x", "confidence": 2}]}',
        '{"new_facts": [{"text": "x", "confidence": true}]}',
        '{"new_facts": [{"text": "x", "fact_type": "gossip"}]}',
        '{"new_facts": [{"text": "x", "contradiction": "mild"}]}',
        '{"new_facts": [{"text": "x", "supporting_episode_ids": [1]}]}',
        '{"new_procedures": [{"name": "n", "trigger": "t", "steps": []}]}',
        '{"procedural_updates": [{"procedure_id": "p", "outcome": "maybe"}]}',
    ],
)
def test_a_malformed_answer_is_refused(text):
    with pytest.raises(MalformedOutput):
        parse_answer(text)
