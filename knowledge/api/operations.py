"""The knowledge graph's replayable operation: ``entity.upsert`` (the agents batch endpoint
and ``POST .../entities`` with an ``Operation-Id`` header apply it exactly once)."""

from __future__ import annotations

from typing import Any

from agents.api.operations import Kind
from agents.models import Agent
from atlas_platform.exceptions import AtlasError
from knowledge.api import serializers as s
from knowledge.parsing import parse_note
from knowledge.services.entities import Upserted, entity_upsert
from memory.public import searchable_writes_together


def upsert_json(done: Upserted) -> dict[str, Any]:
    return dict(s.UpsertOut(done).data)


def _upsert(agent: Agent, args: dict[str, Any]) -> dict[str, Any]:
    return upsert_json(entity_upsert(user=agent.user, **args))


def _search_text(args: dict[str, Any]) -> str | None:
    """What the upsert embeds (the note's search text), embedded with its run's; a note that
    does not parse is applied alone (and refused there)."""
    try:
        return parse_note(path=args["path"], content=args["content"]).search_text
    except AtlasError:
        return None


ENTITY_UPSERT = Kind(
    s.EntityUpsertIn,
    _upsert,
    lambda args: True,
    together=_search_text,
    block=searchable_writes_together,
)
