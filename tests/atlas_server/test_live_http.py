"""End to end over a real socket: a live server on loopback, plain HTTP with httpx2.

The Sarah walk-through runs on every backend (embedded, Elasticsearch dls, Elasticsearch
filter); the rest on the embedded one.
"""

from __future__ import annotations

from typing import Any

import httpx2 as httpx
import pytest

from tests.atlas_server.conftest import user_token

pytestmark = pytest.mark.django_db(transaction=True)


def client_for(live_server, token: str) -> httpx.Client:
    return httpx.Client(
        base_url=f"{live_server.url}/api/v1/",
        headers={"Authorization": f"Bearer {token}"},
        timeout=30.0,
    )


def write(http: httpx.Client, text: str, **fields: Any) -> Any:
    response = http.post(
        "users/alice/memories", json={"text": text, "memory_type": "semantic", **fields}
    )
    assert response.status_code == 201, response.text
    return response.json()


def test_sarah_moves_from_bristol_to_edinburgh_over_http(live_server, people):
    with client_for(live_server, user_token(people.alice)) as http:
        bristol = write(http, "Sarah lives in Bristol", fact_type="world")
        edinburgh = write(
            http,
            "Sarah now lives in Edinburgh",
            supersedes=[bristol["id"]],
            contradiction="natural",
        )
        recall = http.post("users/alice/recall", json={"query": "Where does Sarah live?"})
        history = http.get(f"users/alice/memories/{bristol['id']}/history")
        archived = http.post(
            "users/alice/recall",
            json={"query": "Where does Sarah live?", "include_superseded": True},
        )

    assert recall.status_code == 200
    hits = recall.json()["hits"]
    assert hits[0]["id"] == edinburgh["id"] and hits[0]["text"] == "Sarah now lives in Edinburgh"
    assert bristol["id"] not in [h["id"] for h in hits]
    chain = history.json()["chain"]
    assert [m["id"] for m in chain] == [bristol["id"], edinburgh["id"]]
    assert chain[0]["superseded_by"] == edinburgh["id"] and chain[1]["supersedes"] == [
        bristol["id"]
    ]
    flagged = {h["id"]: h for h in archived.json()["hits"]}
    assert flagged[bristol["id"]]["superseded_by"] == edinburgh["id"]


def test_a_fact_written_in_a_turn_is_recalled_in_the_same_turn(live_server, store, alice):
    with client_for(live_server, user_token(alice)) as http:
        turn = http.post("users/alice/turns", json={"text": "My new laptop is a ThinkPad X1"})
        fact = write(http, "Alice's laptop is a ThinkPad X1 Carbon")
        recall = http.post("users/alice/recall", json={"query": "which laptop", "k": 5})

    assert turn.status_code == 201
    ids = [h["id"] for h in recall.json()["hits"]]
    assert fact["id"] in ids and turn.json()["episode"]["id"] in ids


def test_refusals_hold_over_http(live_server, store, alice, bob):
    with client_for(live_server, user_token(alice)) as http:
        other = http.post("users/bob/recall", json={"query": "x"})
        anonymous = httpx.post(f"{live_server.url}/api/v1/users/alice/recall", json={"query": "x"})

    assert other.status_code == 404 and other.json()["error"]["code"] == "user_not_found"
    assert anonymous.status_code == 401 and anonymous.headers["WWW-Authenticate"] == "Bearer"
