"""The memory endpoints on the embedded backend, through Django's test client."""

from __future__ import annotations

import re

import pytest

from memory.services import bookkeeping
from tests.atlas_server.conftest import error_code, tenant_token

pytestmark = pytest.mark.usefixtures("store")
HIT_FIELDS = (
    *("id", "memory_type", "text", "score", "rank", "created_at", "timestamp", "confidence"),
    *("superseded_by", "supersedes", "superseded_at", "contradiction", "fact_type", "name"),
    *("steps", "success_count", "failure_count", "version", "use_count", "last_used_at"),
    "leg_ranks",
)


def write(api, token, text, user="alice", **fields):
    response = api.post(
        f"users/{user}/memories", {"text": text, "memory_type": "semantic", **fields}, token=token
    )
    assert response.status_code == 201, response.content
    return response.json()


def test_a_turn_stores_the_episode_and_recalls_on_the_same_words(api, alice_token):
    fact = write(api, alice_token, "The build server is called ORION-7")

    response = api.post(
        "users/alice/turns",
        {"text": "ORION-7 is down again", "session_id": "s-1", "agent": "ops-bot", "k": 3},
        token=alice_token,
    )

    assert response.status_code == 201
    body = response.json()
    assert body["episode"]["memory_type"] == "episodic" and body["episode"]["session_id"] == "s-1"
    assert body["episode"]["text"] == "ORION-7 is down again"
    assert [h["id"] for h in body["hits"]] == [fact["id"]]  # the episode itself is excluded
    assert {"legs", "reranker", "reranked", "timings_ms", "took_ms"} <= set(body)


def test_text_only_turns_get_an_inferred_session_the_api_shows(api, alice_token):
    first = api.post("users/alice/turns", {"text": "Got a sec?"}, token=alice_token).json()
    second = api.post("users/alice/turns", {"text": "Always"}, token=alice_token).json()
    named = api.post(
        "users/alice/turns", {"text": "named", "session_id": "s-9"}, token=alice_token
    ).json()

    session = first["episode"]["session_id"]
    assert session and first["episode"]["session_inferred"] is True
    assert (second["episode"]["session_id"], second["episode"]["session_inferred"]) == (
        session,
        True,
    )
    assert (named["episode"]["session_id"], named["episode"]["session_inferred"]) == ("s-9", False)


def test_recall_returns_every_documented_field(api, alice_token):
    write(api, alice_token, "Alice prefers window seats", fact_type="preference")

    response = api.post(
        "users/alice/recall", {"query": "seat preference", "k": 5}, token=alice_token
    )

    assert response.status_code == 200
    body = response.json()
    hit = body["hits"][0]
    assert set(HIT_FIELDS) <= set(hit), set(HIT_FIELDS) - set(hit)
    assert (
        hit["memory_type"] == "semantic" and hit["rank"] == 1 and hit["fact_type"] == "preference"
    )
    assert "embedding" not in hit and "user_id" not in hit and "tenant_id" not in hit
    assert body["legs"] == ["lexical", "dense"] and body["reranked"] is False


def test_recall_filters_by_type_and_can_show_superseded_facts(api, alice_token):
    old = write(api, alice_token, "Alice's office is on floor 2")
    write(api, alice_token, "Alice's office is on floor 5", supersedes=[old["id"]])
    api.post("users/alice/turns", {"text": "Which floor is my office on?"}, token=alice_token)

    only_facts = api.post(
        "users/alice/recall",
        {"query": "office floor", "memory_types": ["semantic"], "include_superseded": True},
        token=alice_token,
    ).json()["hits"]

    assert {h["memory_type"] for h in only_facts} == {"semantic"}
    archived = [h for h in only_facts if h["id"] == old["id"]]
    assert archived and archived[0]["superseded_by"]


def test_recall_query_count_is_pinned(api, alice_token, django_assert_max_num_queries):
    write(api, alice_token, "Alice's cat is called Miso")
    bookkeeping.drain()

    # token lookup, its last-used bump (at most once a minute), the user, the recall statistics
    # upsert: nothing per hit
    with django_assert_max_num_queries(4):
        response = api.post("users/alice/recall", {"query": "cat name"}, token=alice_token)

    assert response.status_code == 200 and response.json()["hits"]


def test_get_history_and_forget(api, alice_token):
    first = write(api, alice_token, "Sarah lives in Bristol")
    second = write(api, alice_token, "Sarah now lives in Edinburgh", supersedes=[first["id"]])

    got = api.get(f"users/alice/memories/{first['id']}", token=alice_token).json()
    chain = api.get(f"users/alice/memories/{second['id']}/history", token=alice_token).json()
    forgotten = api.delete(f"users/alice/memories/{second['id']}", token=alice_token)
    after = api.get(f"users/alice/memories/{second['id']}", token=alice_token)

    assert got["superseded_by"] == second["id"]
    assert [m["id"] for m in chain["chain"]] == [first["id"], second["id"]]
    assert forgotten.status_code == 204 and forgotten.content == b""
    assert after.status_code == 404 and error_code(after) == "memory_not_found"


def test_a_procedure_records_outcomes_and_refined_steps(api, alice_token):
    playbook = api.post(
        "users/alice/memories",
        {
            "text": "How to restart the VPN",
            "memory_type": "procedural",
            "name": "vpn restart",
            "steps": ["Open settings", {"instruction": "Toggle VPN", "tool": "netctl"}],
        },
        token=alice_token,
    ).json()

    ok = api.post(
        f"users/alice/procedures/{playbook['id']}/outcome", {"success": True}, token=alice_token
    )
    refined = api.post(
        f"users/alice/procedures/{playbook['id']}/outcome",
        {"success": False, "refined_steps": ["Reboot", "Toggle VPN"]},
        token=alice_token,
    ).json()

    assert [s["instruction"] for s in playbook["steps"]] == ["Open settings", "Toggle VPN"]
    assert playbook["steps"][1]["tool"] == "netctl"
    assert ok.status_code == 200 and ok.json()["success_count"] == 1
    assert refined["failure_count"] == 1 and refined["version"] == 2
    assert [s["instruction"] for s in refined["steps"]] == ["Reboot", "Toggle VPN"]


def test_outcome_of_a_fact_is_not_found(api, alice_token):
    fact = write(api, alice_token, "Alice likes tea")

    response = api.post(
        f"users/alice/procedures/{fact['id']}/outcome", {"success": True}, token=alice_token
    )

    assert response.status_code == 404


def test_the_catalog_is_listed_page_by_page_put_and_deleted(api, acme, alice, alice_token):
    token = tenant_token(acme, allow_catalog=True)
    ids = [f"catalog:faq-{n}" for n in range(3)]  # the tenant's keys; no internal tenant id
    for n in range(3):
        put = api.put(
            f"catalog/faq-{n}", {"text": f"Answer number {n}", "tags": ["faq"]}, token=token
        )
        assert put.status_code == 200 and put.json()["id"] == ids[n]
    replaced = api.put("catalog/faq-0", {"text": "Opening hours are 9 to 5"}, token=token)

    first = api.get("catalog?limit=2", token=token).json()
    second = api.get(f"catalog?limit=2&after={first['next']}", token=token).json()
    gone = api.delete("catalog/faq-1", token=token)
    again = api.delete("catalog/faq-1", token=token)
    hits = api.post("users/alice/recall", {"query": "opening hours"}, token=alice_token).json()

    assert replaced.status_code == 200 and replaced.json() == {
        "id": ids[0],
        "text": "Opening hours are 9 to 5",
        "name": None,
        "tags": [],
        "metadata": {},
    }
    listed = [d["id"] for d in first["results"] + second["results"]]
    assert sorted(listed) == ids and second["next"] is None
    assert {d["memory_type"] for d in first["results"]} == {"catalog"}
    assert gone.status_code == 204 and again.status_code == 404
    assert hits["hits"][0]["id"] == ids[0] and hits["hits"][0]["memory_type"] == "catalog"
    assert str(acme.pk) not in hits["hits"][0]["id"]
    got = api.get(f"users/alice/memories/{ids[0]}", token=alice_token)
    assert got.status_code == 200 and got.json()["text"] == "Opening hours are 9 to 5"
    assert api.delete(f"catalog/{ids[2]}", token=token).status_code == 204


def test_a_tenant_token_acts_for_any_user_of_its_tenant(api, acme, alice, bob):
    token = tenant_token(acme)

    bob_fact = write(api, token, "Bob drinks his coffee black", user="bob")
    alice_view = api.get(f"users/alice/memories/{bob_fact['id']}", token=token)

    assert api.get(f"users/bob/memories/{bob_fact['id']}", token=token).status_code == 200
    assert alice_view.status_code == 404  # bob's fact is not alice's


def test_the_schema_and_the_docs_page_are_served_without_a_cdn(api):
    schema = api.get("schema/?format=json")
    docs = api.get("docs/")

    assert schema.status_code == 200
    spec = schema.json()
    assert spec["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"
    assert "/api/v1/users/{user_id}/recall" in spec["paths"] and "/api/v1/token" in spec["paths"]
    page = docs.content.decode()
    assert docs.status_code == 200 and "drf_spectacular_sidecar" in page
    # No asset from elsewhere: no absolute or scheme-relative URL, no CDN host. (A bare "cdn"
    # matched once inside the page's random CSRF token.)
    assert "https://" not in page and "http://" not in page
    assert not re.search(r"""(?:src|href)\s*=\s*["']//""", page)
    assert not re.search(r"\bcdn[\w-]*\.|jsdelivr|unpkg|cdnjs", page, re.IGNORECASE)
