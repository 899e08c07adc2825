"""The REST renderer writes a lone surrogate already stored as its escape (SQLite, the
embedded default, took one before input refused them): the response never fails on it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from atlas_platform.renderers import JSONRenderer


@pytest.mark.django_db
def test_it_renders_the_api(client: Client) -> None:
    response: Any = client.get("/api/v1/users/alice/memories", HTTP_ACCEPT="application/json")

    assert response.status_code == 401 and isinstance(response.accepted_renderer, JSONRenderer)


def test_a_stored_lone_surrogate_is_written_as_its_escape():
    data = {"front_matter": {"x": "odd \ud800 value"}, "title": "caf\u00e9"}

    body = JSONRenderer().render(data)

    assert json.loads(body) == data  # the same JSON value, and valid UTF-8
    assert b"\\ud800" in body


def test_plain_text_stays_unescaped():
    assert JSONRenderer().render({"title": "caf\u00e9"}) == '{"title":"caf\u00e9"}'.encode()
