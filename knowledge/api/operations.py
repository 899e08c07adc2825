"""The knowledge graph's replayable operation: ``entity.upsert`` (the agents batch endpoint
and ``POST .../entities`` with an ``Operation-Id`` header apply it exactly once)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agents.api.operations import Kind
from agents.models import Agent
from knowledge.api import serializers as s
from knowledge.services.batches import (
    entity_upserts_prepare,
    entity_upserts_together,
    prepared_upsert,
)
from knowledge.services.entities import Upserted, entity_upsert


def upsert_json(done: Upserted) -> dict[str, Any]:
    return dict(_UPSERT_OUT.to_representation(done))


# One serializer for every answer: a new one per answer copies its (nested) fields each time,
# the most of an upsert's answer; representing an object keeps no state on the serializer.
_UPSERT_OUT = s.UpsertOut()


def _upsert(agent: Agent, args: dict[str, Any]) -> dict[str, Any]:
    done = prepared_upsert(args)  # applied with its run's (``entity_upserts_prepare``)
    return upsert_json(done if done is not None else entity_upsert(user=agent.user, **args))


def _prepare(agent: Agent, many: Sequence[dict[str, Any]]) -> None:
    entity_upserts_prepare(user=agent.user, requests=many)


def _in_run(args: dict[str, Any]) -> str:
    """Every upsert joins its run, unparsed: the run's ``prepare`` parses each note once and
    embeds the ones that need a vector in one call, and a note that does not parse is refused
    in its own answer. (No text for the block to embed ahead: "".)"""
    return ""


ENTITY_UPSERT = Kind(
    s.EntityUpsertIn,
    _upsert,
    lambda args: True,
    together=_in_run,
    block=entity_upserts_together,
    prepare=_prepare,
)
