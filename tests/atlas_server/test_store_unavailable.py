"""A failing memory store is a 503 in the shared shape whose body says so plainly: never the
store's own error text, never a document it refused."""

from __future__ import annotations

import pytest

from memory.engine.base import EngineError
from memory.services.common import backend
from tests.atlas_server.conftest import error_code

pytestmark = pytest.mark.usefixtures("store")
RAW = "index [atlas-memories] refused {'text': 'Alice's locker code is 4711'}"


def test_a_store_failure_is_a_plain_503(api, alice_token, monkeypatch):
    def broken(self, scope, query):
        raise EngineError(RAW)

    monkeypatch.setattr(type(backend()), "recall_legs", broken)

    response = api.post("users/alice/recall", {"query": "locker code"}, token=alice_token)

    assert response.status_code == 503
    assert error_code(response) == "memory_store_unavailable"
    assert (
        "4711" not in response.content.decode()
        and "atlas-memories" not in response.content.decode()
    )
