"""Consolidation fixtures: the fake chat model on loopback, the embedded store, a helper that
records turns, and (in test_worker.py) a real Celery worker on Redis and Elasticsearch."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from atlas_platform.config import ChatModelSettings
from memory.engine.types import MemoryDoc
from memory.services import bookkeeping
from memory.services.writes import memory_turn_record
from tenants.models import User
from tests.consolidation.fake_llm import FakeChatServer


@pytest.fixture(scope="session")
def chat_server() -> Iterator[FakeChatServer]:
    server = FakeChatServer()
    yield server
    server.close()


@pytest.fixture
def chat(chat_server: FakeChatServer, settings: Any) -> Iterator[FakeChatServer]:
    """The configured consolidation model: the fake server, fresh script, quick timeouts."""
    chat_server.reset()
    settings.ATLAS_CHAT_MODEL = ChatModelSettings(
        base_url=chat_server.url,
        model="test-consolidator",
        api_key="test-key",
        timeout_s=5.0,
        http_retries=1,
    )
    yield chat_server
    chat_server.reset()


@pytest.fixture
def no_model(settings: Any) -> None:
    settings.ATLAS_CHAT_MODEL = ChatModelSettings()


@pytest.fixture
def store(settings: Any, tmp_path: Any, db: None) -> Iterator[str]:
    """The embedded backend in a throwaway file (engine tests run here for speed)."""
    settings.ATLAS_MEMORY_BACKEND = "embedded"
    settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")
    yield "embedded"
    bookkeeping.drain()


def say(user: User, *texts: str, session: str = "s1") -> list[MemoryDoc]:
    """Record each text as a turn of ``user`` (in order); returns the episodes."""
    return [memory_turn_record(user=user, text=t, session_id=session).episode for t in texts]
