"""Reading back what Atlas holds about a user: the paginated listing (type / time /
supersession filters), the JSON export (right of access), the forget-request listing; and the
walk from provisioning to recall through the REST API alone."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from memory.services.writes import memory_write
from tests.atlas_server.conftest import error_code, tenant_token, user_token

pytestmark = pytest.mark.usefixtures("store")


def exported(response):
    """An export's JSON (the body is streamed)."""
    assert response.status_code == 200, response
    assert response.streaming and response["Content-Type"] == "application/json"
    return json.loads(b"".join(response.streaming_content))


def _ids(response):
    assert response.status_code == 200, response.content
    return [m["id"] for m in response.json()["results"]]


def test_the_listing_pages_and_filters_by_type_and_supersession(api, alice, bob):
    old = memory_write(user=alice, text="Alice lives in Lyon", memory_type="semantic")
    new = memory_write(
        user=alice, text="Alice lives in Nantes", memory_type="semantic", supersedes=[old.id]
    )
    play = memory_write(
        user=alice, text="Book a table", memory_type="procedural", steps=[{"instruction": "Call"}]
    )
    memory_write(user=bob, text="Bob lives in Oslo", memory_type="semantic")
    token = user_token(alice)

    everything = _ids(api.get("users/alice/memories", token=token))
    first = api.get("users/alice/memories?limit=2", token=token).json()
    second = _ids(api.get(f"users/alice/memories?limit=2&after={first['next']}", token=token))
    current = _ids(api.get("users/alice/memories?superseded=current", token=token))
    archived = _ids(api.get("users/alice/memories?superseded=only", token=token))
    procedural = _ids(api.get("users/alice/memories?memory_type=procedural", token=token))
    both = api.get("users/alice/memories?memory_type=procedural&memory_type=semantic", token=token)

    assert sorted(everything) == sorted([old.id, new.id, play.id])
    assert len(first["results"]) == 2 and sorted([*_ids_of(first), *second]) == sorted(everything)
    assert sorted(current) == sorted([new.id, play.id]) and archived == [old.id]
    assert procedural == [play.id] and len(_ids(both)) == 3
    listed = api.get("users/alice/memories", token=token).json()["results"]
    assert all("memory_type" in m and "type" not in m for m in listed)


def _ids_of(page):
    return [m["id"] for m in page["results"]]


def test_the_listing_filters_by_when_it_was_stored(api, alice):
    memory_write(user=alice, text="Alice likes tea", memory_type="semantic")
    token = user_token(alice)
    future = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")

    later = _ids(api.get(f"users/alice/memories?since={future}", token=token))
    before = _ids(api.get(f"users/alice/memories?until={future}", token=token))

    assert later == [] and len(before) == 1


@pytest.mark.parametrize(
    "query",
    ["memory_type=catalog", "superseded=maybe", "limit=0", "since=yesterday", "types=semantic"],
)
def test_bad_listing_parameters_are_a_400(api, alice, query):
    response = api.get(f"users/alice/memories?{query}", token=user_token(alice))

    assert response.status_code == 400, response.content


def test_the_export_holds_every_memory_of_the_user_and_nobody_elses(api, alice, bob):
    old = memory_write(user=alice, text="Alice's bike is red", memory_type="semantic")
    memory_write(
        user=alice, text="Alice's bike is blue", memory_type="semantic", supersedes=[old.id]
    )
    for n in range(120):  # more than one internal page
        memory_write(user=alice, text=f"note {n}", memory_type="semantic")
    memory_write(user=bob, text="Bob's bike is green", memory_type="semantic")

    response = api.get("users/alice/export", token=user_token(alice))

    body = exported(response)
    texts = [m["text"] for m in body["memories"]]
    assert len(texts) == 122 and len(set(m["id"] for m in body["memories"])) == 122
    assert "Alice's bike is red" in texts and "Bob's bike is green" not in texts
    assert body["counts"]["memories"] == 122
    assert {m["memory_type"] for m in body["memories"]} == {"semantic"}
    assert body["user"]["external_id"] == "alice" and body["exported_at"]


def test_another_users_export_is_not_found(api, alice, bob):
    response = api.get("users/bob/export", token=user_token(alice))

    assert response.status_code == 404 and error_code(response) == "user_not_found"


def test_the_forget_requests_are_listed_newest_first(api, alice, bob):
    token = user_token(alice)
    made = [
        api.post("users/alice/forget-requests", {"scope": "user"}, token=token).json()["id"]
        for _ in range(3)
    ]
    api.post("users/bob/forget-requests", {"scope": "user"}, token=user_token(bob))

    first = api.get("users/alice/forget-requests?limit=2", token=token).json()
    rest = api.get(f"users/alice/forget-requests?after={first['next']}", token=token).json()

    assert [r["id"] for r in first["results"]] == made[::-1][:2]
    assert [r["id"] for r in rest["results"]] == made[:1] and rest["next"] is None
    assert first["results"][0]["status"] == "pending"


def test_provisioning_to_recall_through_the_rest_api_only(api, acme):
    """An integrator's first hour: a provisioning token makes the user, the agent records a
    turn and a fact, recall finds it, the listing and export show it, a forget request is
    opened and listed."""
    fleet = tenant_token(acme, allow_provisioning=True, allow_export=True)

    made = api.post("users", {"external_id": "u-1001", "display_name": "Pat"}, token=fleet)
    turn = api.post(
        "users/u-1001/turns", {"text": "My cat Miso hates the vacuum cleaner"}, token=fleet
    )
    fact = api.post(
        "users/u-1001/memories",
        {"text": "Pat's cat is called Miso", "memory_type": "semantic"},
        token=fleet,
    )
    recall = api.post("users/u-1001/recall", {"query": "what is my cat called?"}, token=fleet)
    listed = api.get("users/u-1001/memories?memory_type=semantic", token=fleet)
    export = api.get("users/u-1001/export", token=fleet)
    forget = api.post("users/u-1001/forget-requests", {"scope": "user"}, token=fleet)
    forgets = api.get("users/u-1001/forget-requests", token=fleet)

    assert made.status_code == 201 and turn.status_code == 201 and fact.status_code == 201
    assert fact.json()["memory_type"] == "semantic" and "type" not in fact.json()
    hits = recall.json()["hits"]
    assert hits and hits[0]["text"] == "Pat's cat is called Miso", hits
    assert _ids(listed) == [fact.json()["id"]]
    exported_types = sorted(m["memory_type"] for m in exported(export)["memories"])
    assert exported_types == ["episodic", "semantic"]
    assert forget.status_code == 201
    assert [r["id"] for r in forgets.json()["results"]] == [forget.json()["id"]]
