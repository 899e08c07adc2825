"""The consolidation prompt and the strict parsing of the model's JSON answer.

Parsing checks shape only (types, required keys); the guards in ``services.guards`` decide
what of a well-formed answer may be written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from atlas_platform.exceptions import AtlasError
from memory.public import CONTRADICTIONS, FACT_TYPES, MemoryDoc

SYSTEM_PROMPT = """\
You consolidate an AI agent's memory of one user. You receive the user's recent messages \
(episodes, oldest first, each with an id), a few earlier episodes for context, the user's \
current facts and playbooks (each with an id), and for some episodes the playbooks the agent \
was given to answer it ("playbooks_suggested_in_reply"): the user's next messages in that \
session tell whether they worked.

Answer with ONE JSON object and nothing else:
{
  "new_facts": [{"text": str, "fact_type": "preference"|"identity"|"constraint"|"world",
                 "confidence": 0..1, "supporting_episode_ids": [episode ids],
                 "supersedes": [ids of current facts this one makes false],
                 "contradiction": "natural"|"harsh"|null}],
  "new_procedures": [{"name": str, "trigger": str, "steps": [str],
                      "supporting_episode_ids": [episode ids], "confidence": 0..1}],
  "procedural_updates": [{"procedure_id": id, "outcome": "success"|"failure",
                          "refined_steps": [str] | null, "supporting_episode_ids": [ids]}]
}

Rules:
- Only durable facts about the user, written as standalone sentences. Never restate a current \
fact; if a current fact became false, write the new fact with "supersedes" naming it and \
"contradiction": "natural" (things changed) or "harsh" (the user says it was wrong).
- Episodes with "speaker": "assistant" are the agent's own replies: context only, never \
evidence of a fact about the user on their own.
- Every item cites the episodes (from "episodes", not "context_episodes") that support it. \
Nothing durable happened: return empty lists.
- A new procedure only for a multi-step fix that worked and matches no current playbook.
- A procedural update when the user confirms a suggested playbook worked ("thanks, that fixed \
it": success) or did not ("that didn't help": failure); add refined_steps when the user says \
what actually worked instead.
"""


class MalformedOutput(AtlasError):
    """The model's answer is not the JSON object the prompt asks for."""

    code = "consolidation_malformed_output"


@dataclass
class FactCandidate:
    text: str
    fact_type: str | None
    confidence: float
    supporting_episode_ids: list[str]
    supersedes: list[str] = field(default_factory=list)
    contradiction: str | None = None


@dataclass
class ProcedureCandidate:
    name: str
    trigger: str
    steps: list[str]
    supporting_episode_ids: list[str]
    confidence: float


@dataclass
class ProcedureUpdate:
    procedure_id: str
    success: bool
    refined_steps: list[str] | None
    supporting_episode_ids: list[str]


@dataclass
class Answer:
    facts: list[FactCandidate]
    procedures: list[ProcedureCandidate]
    updates: list[ProcedureUpdate]

    @property
    def size(self) -> int:
        return len(self.facts) + len(self.procedures) + len(self.updates)


def _episode(doc: MemoryDoc, suggested: dict[str, list[str]]) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": doc.id,
        "time": doc.timestamp.isoformat(),
        "session": doc.session_id,
        "text": doc.text,
    }
    if doc.source == "assistant":  # the agent's own reply (memory.services.replies)
        item["speaker"] = "assistant"
    if suggested.get(doc.id):
        item["playbooks_suggested_in_reply"] = suggested[doc.id]
    return item


def build_messages(
    *,
    window: list[MemoryDoc],
    context: list[MemoryDoc],
    facts: list[MemoryDoc],
    playbooks: list[MemoryDoc],
    suggested: dict[str, list[str]],
) -> list[dict[str, str]]:
    payload = {
        "context_episodes": [_episode(d, suggested) for d in context],
        "episodes": [_episode(d, suggested) for d in window],
        "current_facts": [
            {"id": d.id, "text": d.text, "fact_type": d.fact_type, "confidence": d.confidence}
            for d in facts
        ],
        "playbooks": [
            {
                "id": d.id,
                "name": d.name,
                "trigger": d.trigger,
                "steps": [s.get("instruction") for s in d.steps],
                "success_count": d.success_count,
                "failure_count": d.failure_count,
            }
            for d in playbooks
        ],
    }
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": json.dumps(payload, ensure_ascii=False)},
    ]


def correction(answer: str, problem: str) -> list[dict[str, str]]:
    """Messages that show the model its malformed answer and ask again."""
    return [
        {"role": "assistant", "content": answer[:4000]},
        {
            "role": "user",
            "content": f"That is not the JSON object asked for ({problem}). Answer again with "
            "only that JSON object.",
        },
    ]


def parse_answer(text: str) -> Answer:
    """The model's answer as candidates, or ``MalformedOutput``."""
    try:
        data = json.loads(_strip_fence(text))
    except ValueError as exc:
        raise MalformedOutput(f"The answer is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise MalformedOutput("The answer is not a JSON object.")
    return Answer(
        facts=[_fact(item) for item in _items(data, "new_facts")],
        procedures=[_procedure(item) for item in _items(data, "new_procedures")],
        updates=[_update(item) for item in _items(data, "procedural_updates")],
    )


def _strip_fence(text: str) -> str:
    """Some servers wrap JSON in a markdown fence despite json_object mode."""
    stripped = text.strip()
    if stripped.startswith("```") and stripped.endswith("```"):
        stripped = stripped.strip("`").removeprefix("json").strip()
    return stripped


def _items(data: dict[str, Any], key: str) -> list[dict[str, Any]]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(i, dict) for i in value):
        raise MalformedOutput(f"{key} must be a list of objects.")
    return value


def _text(item: dict[str, Any], key: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value.strip():
        raise MalformedOutput(f"{key} must be a non-empty string.")
    return value.strip()


def _ids(item: dict[str, Any], key: str) -> list[str]:
    value = item.get(key)
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(i, str) for i in value):
        raise MalformedOutput(f"{key} must be a list of ids.")
    return list(dict.fromkeys(value))


def _confidence(item: dict[str, Any]) -> float:
    value = item.get("confidence", 1.0)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise MalformedOutput("confidence must be a number between 0 and 1.")
    return float(value)


def _steps(value: Any) -> list[str]:
    if not isinstance(value, list) or not value:
        raise MalformedOutput("steps must be a non-empty list.")
    steps = [s.get("instruction") if isinstance(s, dict) else s for s in value]
    if not all(isinstance(s, str) and s.strip() for s in steps):
        raise MalformedOutput("each step must be a non-empty string.")
    return [str(s).strip() for s in steps]


def _fact(item: dict[str, Any]) -> FactCandidate:
    fact_type = item.get("fact_type")
    if fact_type is not None and fact_type not in FACT_TYPES:
        raise MalformedOutput(f"fact_type must be one of {', '.join(FACT_TYPES)}.")
    contradiction = item.get("contradiction")
    if contradiction is not None and contradiction not in CONTRADICTIONS:
        raise MalformedOutput("contradiction must be natural, harsh or null.")
    supersedes = _ids(item, "supersedes") or _ids(item, "supersedes_id")
    return FactCandidate(
        text=_text(item, "text"),
        fact_type=fact_type,
        confidence=_confidence(item),
        supporting_episode_ids=_ids(item, "supporting_episode_ids"),
        supersedes=supersedes,
        contradiction=(contradiction or "natural") if supersedes else None,
    )


def _procedure(item: dict[str, Any]) -> ProcedureCandidate:
    return ProcedureCandidate(
        name=_text(item, "name"),
        trigger=_text(item, "trigger"),
        steps=_steps(item.get("steps")),
        supporting_episode_ids=_ids(item, "supporting_episode_ids"),
        confidence=_confidence(item),
    )


def _update(item: dict[str, Any]) -> ProcedureUpdate:
    outcome = item.get("outcome")
    if outcome not in ("success", "failure"):
        raise MalformedOutput("outcome must be success or failure.")
    refined = item.get("refined_steps")
    return ProcedureUpdate(
        procedure_id=_text(item, "procedure_id"),
        success=outcome == "success",
        refined_steps=_steps(refined) if refined is not None else None,
        supporting_episode_ids=_ids(item, "supporting_episode_ids"),
    )
