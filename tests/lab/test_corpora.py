"""The generated corpora (conversations, agent work): committed files match their generator,
validate against the contract, hold what the contract asks for, and split dev/test by kind.
Also the evidence-share metric and the defaults rule (``lab.evaluation.sweep``)."""

from __future__ import annotations

import copy
import json
from collections import Counter
from typing import Any

import pytest
from django.core.management import call_command

from lab.evaluation.corpus import (
    CORPORA,
    CORPUS_DIR,
    CORPUS_KINDS,
    corpus_files,
    read_corpus,
    read_persona,
    validate_persona,
)
from lab.evaluation.generators import generated_files
from lab.evaluation.metrics import evidence_ranks, found, paired, scores
from lab.evaluation.sweep import rule_key


def test_the_committed_generated_files_are_what_the_generators_write() -> None:
    for path, text in generated_files():
        assert path.read_text(encoding="utf-8") == text, f"{path} is stale: generate_corpora"
    call_command("generate_corpora", check=True)


@pytest.mark.parametrize("corpus", CORPORA)
def test_every_corpus_validates_and_has_every_kind_in_both_splits(corpus: str) -> None:
    files = corpus_files(CORPUS_DIR, corpus)
    assert files
    personas = [read_persona(path, corpus) for path in files]
    kinds = Counter((q.kind, q.split) for p in personas for q in p.questions)
    for kind in CORPUS_KINDS[corpus]:
        assert kinds[(kind, "dev")] >= 1 and kinds[(kind, "test")] >= 1, (kind, kinds)


def test_the_chats_are_long_dated_two_person_histories() -> None:
    personas, _ = read_corpus(CORPUS_DIR, None, ["conversations"])
    assert len(personas) >= 3
    for chat in personas:
        sessions = {m.raw["session"] for m in chat.memories}
        speakers = {m.raw["speaker"] for m in chat.memories}
        days = sorted(m.timestamp for m in chat.memories)
        assert len(sessions) >= 15 and len(chat.memories) >= 300 and len(speakers) == 2
        assert (days[-1] - days[0]).days >= 180  # months, not days
        multi = [q for q in chat.questions if q.kind == "multi_hop"]
        assert multi and all(len(q.targets) >= 2 and q.match == "all" for q in multi)


def test_agent_work_has_reversed_decisions_and_runbooks() -> None:
    (agent,) = read_corpus(CORPUS_DIR, None, ["agent_work"])[0]
    types = Counter(m.type for m in agent.memories)
    assert types["episodic"] >= 80 and types["semantic"] >= 25 and types["procedural"] >= 5
    assert sum(1 for m in agent.memories if m.raw.get("supersedes")) >= 6


def _chat(turns: int = 300, sessions: int = 15) -> dict[str, Any]:
    memories = [
        {
            "key": f"cc-ep-{n:04d}",
            "type": "episodic",
            "text": f"turn {n}",
            "timestamp": f"2026-01-{1 + n % sessions:02d}T10:00:00+00:00",
            "session": f"s{n % sessions}",
            "speaker": "Ann" if n % 2 else "Bo",
        }
        for n in range(1, turns + 1)
    ]
    kinds = ["single_hop"] * 10 + ["multi_hop"] * 4 + ["temporal"] * 6 + ["open"] * 4
    questions = [
        {
            "id": f"cc-q-{n:03d}",
            "question": f"q{n}?",
            "targets": ["cc-ep-0001", "cc-ep-0002"],
            "kind": kind,
            "match": "all",
        }
        for n, kind in enumerate(kinds, start=1)
    ]
    return {
        "persona": "chat_test",
        "corpus": "conversations",
        "display_name": "Ann and Bo",
        "description": "test",
        "now": "2026-03-01T00:00:00+00:00",
        "memories": memories,
        "questions": questions,
    }


def test_a_valid_chat_has_no_problems() -> None:
    assert validate_persona(_chat(), stem="chat_test", corpus="conversations") == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d["memories"].pop(), "only 299 turns"),
        (lambda d: d["memories"][0].pop("speaker"), "needs a 'speaker'"),
        (lambda d: d["memories"][0].update(speaker="Cy"), "two speakers, not 3"),
        (lambda d: d["questions"][0].update(kind="paraphrase"), "'kind' must be one of"),
        (lambda d: d["questions"][0].update(match="some"), "'match' must be any or all"),
        (lambda d: d["questions"][0].update(split="train"), "'split' must be dev or test"),
        (lambda d: d.update(corpus="agent_work"), "but the file is in corpus"),
        (lambda d: d.update(questions=d["questions"][10:]), "only 0 'single_hop' questions"),
    ],
)
def test_the_chat_contract_names_each_violation(change: Any, expected: str) -> None:
    data = copy.deepcopy(_chat())
    change(data)
    problems = validate_persona(data, stem="chat_test", corpus="conversations")
    assert any(expected in p for p in problems), problems


def test_too_few_sessions_is_refused() -> None:
    problems = validate_persona(_chat(sessions=10), stem="chat_test", corpus="conversations")
    assert any("only 10 sessions" in p for p in problems), problems


def test_evidence_questions_score_the_share_found() -> None:
    ranks = evidence_ranks(["x", "b", None, "a"], ["a", "b", "c"])
    assert ranks == [4, 2, None]
    assert found(ranks, 1) == 0.0 and found(ranks, 2) == pytest.approx(1 / 3)
    assert found(ranks, 10) == pytest.approx(2 / 3) and found(3, 5) == 1.0
    s = scores([ranks, 1])
    assert s.r5 == round((2 / 3 + 1) / 2, 4) and s.mrr == round((1 / 2 + 1) / 2, 4)
    # Paired: a multi-evidence question counts as found only when all of it is.
    assert paired([[1, 2]], [[1, None]], 5).better == 1


def test_the_rule_prefers_the_worst_corpus_then_the_mean_then_the_current_default() -> None:
    def result(*r10: float) -> dict[str, Any]:
        return {"per_corpus": {f"c{n}": {"r@10": v, "r@5": v} for n, v in enumerate(r10)}}

    lifted_floor = rule_key(result(0.70, 0.90), is_current=False)
    higher_mean = rule_key(result(0.69, 0.99), is_current=False)
    assert lifted_floor > higher_mean
    assert rule_key(result(0.70, 0.91), is_current=False) > lifted_floor
    assert rule_key(result(0.70, 0.90), is_current=True) > lifted_floor


def test_the_overlap_report_counts_per_corpus_and_kind(tmp_path: Any) -> None:
    out = tmp_path / "overlap.json"
    call_command("eval_recall", overlap=True, corpora="all", json_path=str(out))
    corpora = json.loads(out.read_text())["overlap"]["corpora"]
    assert set(corpora) == set(CORPORA)
    assert set(corpora["conversations"]) == {*CORPUS_KINDS["conversations"], "all"}
    assert all(v["n"] > 0 for kinds in corpora.values() for v in kinds.values())


def test_a_sweep_setting_is_a_recall_plan() -> None:
    from lab.evaluation.sweep import Setting

    plan = Setting(
        lexical_weight=1.0,
        rank_constant=10,
        candidates=160,
        decay=("long", 365.0, 3650.0),
        window_decay=False,
        context_boost=0.25,
    ).plan()
    assert (plan.lexical_weight, plan.rank_constant, plan.candidates) == (1.0, 10, 160)
    assert (plan.decay, plan.decay_offset_days, plan.decay_scale_days) == (True, 365.0, 3650.0)
    assert plan.window_decay is False
    assert plan.context_boost == 0.25
    assert Setting(decay=("off", None, None)).plan().decay is False


def test_a_sweep_starts_from_the_resolved_plan() -> None:
    from django.conf import settings

    from lab.evaluation.sweep import Setting
    from memory.public import resolve_plan

    moved = Setting(
        lexical_weight=0.75, rank_constant=9, candidates=120, window_decay=False,
        time_anchor="history", context_boost=0.125, session_spread=0.5, session_depth=3,
    )  # fmt: skip
    assert Setting.of(resolve_plan(moved.plan(), settings.ATLAS_RECALL)) == moved
