"""The list of a user's forget requests costs the same number of queries for one as for six
(no N+1)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.atlas_server.conftest import user_token

pytestmark = pytest.mark.usefixtures("store")


def queries(api, token):
    with CaptureQueriesContext(connection) as captured:
        response = api.get("users/alice/forget-requests", token=token)
    assert response.status_code == 200, response.content
    return len(captured), len(response.json()["results"])


def open_requests(api, token, n):
    for i in range(n):
        body = {"scope": "query", "query": f"my old address {i}"}
        assert api.post("users/alice/forget-requests", body, token=token).status_code == 201


def test_the_list_of_forget_requests_costs_the_same_for_one_and_for_six(api, alice):
    token = user_token(alice)
    open_requests(api, token, 1)
    one, shown = queries(api, token)

    open_requests(api, token, 5)
    six, shown_after = queries(api, token)

    assert (shown, shown_after) == (1, 6)
    assert six == one
    assert one == 3  # the count itself, pinned as measured: a new query shows up here
