"""Knowledge fixtures: a project per named actor and a writer of notes (``note``), on real
PostgreSQL; the memory store is the ``engine`` fixture's (embedded, Elasticsearch dls and
filter) where a test runs per backend."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from agents.models import Project
from agents.services.projects import project_register
from knowledge.services.entities import Upserted, entity_upsert
from tenants.models import User
from tests.atlas_platform.mcp.conftest import atlas_server, embedded_store  # noqa: F401 - a live server
from tests.atlas_server.conftest import api, store  # noqa: F401 - the embedded backend, a JSON caller
from tests.consolidation.conftest import chat, chat_server  # noqa: F401 - the fake chat model
from tests.memory.conftest import People, engine, people  # noqa: F401 - shared fixtures

Note = Callable[..., Upserted]


def project_of(user: User, remote: str = "git@github.com:acme/app.git", **kw: Any) -> Project:
    return project_register(user=user, remote=remote, **kw).project


def fm(**fields: Any) -> str:
    """Front matter + body: ``fm(type="plan", body="...")``."""
    import yaml

    body = str(fields.pop("body", "Body text.\n"))
    if not fields:
        return body
    return f"---\n{yaml.safe_dump(fields, sort_keys=False)}---\n{body}"


def writer(user: User, project: Project, machine: str | None = None) -> Note:
    """Upserts of the user's notes in the project (from ``machine``, when named)."""

    def note(path: str, content: str, base: int | None = None, **kw: Any) -> Upserted:
        if machine is not None:
            kw.setdefault("machine_key", machine)
        return entity_upsert(
            user=user,
            project_key=project.key,
            path=path,
            content=content,
            base_version=base,
            **kw,
        )

    return note


class Clock:
    """Moves ``knowledge``'s server time (agents.services.common.now) by hand."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.at: datetime = timezone.now() - timedelta(days=30)
        for where in (
            "agents.services.common.now",
            "knowledge.services.entities.now",
            "knowledge.services.reconcile.now",
            "knowledge.selectors.now",
            "knowledge.services.handoff.now",
        ):
            monkeypatch.setattr(where, lambda: self.at)

    def advance(self, **delta: float) -> datetime:
        self.at = self.at + timedelta(**delta)
        return self.at


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    return Clock(monkeypatch)
