"""The knowledge graph's replayable operation: ``entity.upsert`` (the agents batch endpoint
and ``POST .../entities`` with an ``Operation-Id`` header apply it exactly once)."""

from __future__ import annotations

from typing import Any

from agents.api.operations import Kind
from agents.models import Agent
from knowledge.api import serializers as s
from knowledge.services.entities import Upserted, entity_upsert


def upsert_json(done: Upserted) -> dict[str, Any]:
    return dict(s.UpsertOut(done).data)


def _upsert(agent: Agent, args: dict[str, Any]) -> dict[str, Any]:
    return upsert_json(entity_upsert(user=agent.user, **args))


ENTITY_UPSERT = Kind(s.EntityUpsertIn, _upsert, lambda args: True)
