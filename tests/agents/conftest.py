"""Agents fixtures: the named actors' agents and tokens bound to them, on real PostgreSQL;
``es_store`` puts memories on the real Elasticsearch cluster (the summary, the notes)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agents.models import Agent
from agents.services.agents import agent_register, agent_token_issue
from memory.services import bookkeeping
from tenants.models import User
from tests.atlas_server.conftest import Api, error_code, store, tenant_token, user_token


def register(user: User, slug: str = "claude-code") -> Agent:
    return agent_register(user=user, slug=slug).agent


def bound_token(agent: Agent) -> str:
    return agent_token_issue(agent=agent, name=f"{agent.slug} bot").secret


@pytest.fixture
def es_store(es: Any, settings: Any, db: None) -> Iterator[str]:
    """Memories on the real cluster (application filter isolation)."""
    settings.ATLAS_MEMORY_BACKEND = "elasticsearch"
    yield "elasticsearch"
    bookkeeping.drain()


@pytest.fixture
def alice_agent(alice: User) -> Agent:
    return register(alice)


@pytest.fixture
def alice_codex(alice: User) -> Agent:
    return register(alice, "codex")


@pytest.fixture
def bob_agent(bob: User) -> Agent:
    return register(bob)


@pytest.fixture
def charlie_agent(charlie: User) -> Agent:
    return register(charlie)


@pytest.fixture
def alice_bound(alice_agent: Agent) -> str:
    return bound_token(alice_agent)


@pytest.fixture
def bob_bound(bob_agent: Agent) -> str:
    return bound_token(bob_agent)


@pytest.fixture
def charlie_bound(charlie_agent: Agent) -> str:
    return bound_token(charlie_agent)


@pytest.fixture
def api(client: Any) -> Api:
    return Api(client)


def users_path(user: str, rest: str) -> str:
    return f"users/{user}/{rest}"


__all__ = ["error_code", "store", "tenant_token", "user_token"]
