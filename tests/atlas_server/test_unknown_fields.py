"""A field no endpoint declares is refused (``unknown_field``), never silently dropped: the
check lives in ``atlas_platform.views.parsed``, so every app's endpoint inherits it."""

from __future__ import annotations

from typing import Any

import pytest

from memory.selectors import memory_page
from tests.atlas_server.conftest import error_code, tenant_token

pytestmark = pytest.mark.usefixtures("store")


def test_a_misspelt_recall_field_is_a_400_naming_it(api, alice_token):
    response = api.post("users/alice/recall", {"query": "tea", "top_k": 3}, token=alice_token)

    assert response.status_code == 400, response.content
    assert error_code(response) == "unknown_field"
    error = response.json()["error"]
    assert error["details"] == {"top_k": ["Unknown field."]}
    assert "top_k" in error["message"] and " k," in error["message"]


def test_an_unknown_field_writes_nothing(api, alice, alice_token):
    body = {"text": "Alice likes green tea", "memory_type": "semantic", "importance": 5}

    response = api.post("users/alice/memories", body, token=alice_token)

    assert response.status_code == 400 and error_code(response) == "unknown_field"
    assert memory_page(user=alice, limit=10).documents == []


def test_an_unknown_field_inside_a_playbook_step_is_refused(api, alice_token):
    body = {
        "text": "Reset a router",
        "memory_type": "procedural",
        "steps": [{"instruction": "Unplug it", "tool_name": "hands"}],
    }

    response = api.post("users/alice/memories", body, token=alice_token)

    assert response.status_code == 400, response.content
    details = str(response.json()["error"]["details"])
    assert "tool_name" in details
    assert "an object with: instruction, order, tool" in details  # what it does take


def test_an_unknown_nested_field_names_what_its_level_takes():
    from rest_framework import serializers

    from atlas_platform.exceptions import ValidationError
    from atlas_platform.views import parsed

    class Inner(serializers.Serializer[Any]):
        name = serializers.CharField()
        size = serializers.IntegerField()

    class Outer(serializers.Serializer[Any]):
        title = serializers.CharField()
        items = serializers.ListField(child=Inner())

    with pytest.raises(ValidationError) as refused:
        parsed(Outer, {"title": "x", "colour": 1, "items": [{"name": "a", "weight": 2}]})

    message = refused.value.message
    assert "Unknown fields: colour, items[0].weight." in message
    assert "This request takes: items, title." in message
    assert "items[0] takes: name, size." in message


def test_an_unknown_query_parameter_is_refused(api, acme):
    token = tenant_token(acme, allow_catalog=True)

    response = api.get("catalog?page_size=5", token=token)

    assert response.status_code == 400 and error_code(response) == "unknown_field"


def test_other_apps_endpoints_inherit_the_check(api, alice_token):
    response = api.post(
        "users/alice/forget-requests", {"scope": "user", "why": "x"}, token=alice_token
    )

    assert response.status_code == 400 and error_code(response) == "unknown_field"
