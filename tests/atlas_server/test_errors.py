"""Bad input, oversized bodies and rate limits: 4xx in the shared error shape."""

from __future__ import annotations

import pytest

from tests.atlas_server.conftest import error_code, tenant_token

pytestmark = pytest.mark.usefixtures("store")
MISSING = "0" * 32


@pytest.mark.parametrize(
    ("path", "body", "code", "field"),
    [
        ("turns", {}, "invalid", "text"),
        ("turns", {"text": "hi", "k": 0}, "invalid", "k"),
        ("turns", {"text": "hi", "timestamp": "yesterday"}, "invalid", "timestamp"),
        ("recall", {}, "invalid", "query"),
        ("recall", {"query": "x", "k": 51}, "invalid", "k"),
        ("recall", {"query": "x", "k": "ten"}, "invalid", "k"),
        ("recall", {"query": "x", "memory_types": ["catalog"]}, "invalid", "memory_types"),
        ("recall", {"query": "x", "include_catalog": "maybe"}, "invalid", "include_catalog"),
        ("memories", {"text": "x"}, "invalid", "memory_type"),
        ("memories", {"text": "x", "memory_type": "episodic"}, "invalid", "memory_type"),
        ("memories", {"text": 5, "memory_type": "semantic"}, "invalid", "text"),
        ("memories", {"text": "x", "memory_type": "semantic", "confidence": 2}, "invalid", None),
        ("memories", {"text": "x", "memory_type": "semantic", "supersedes": "a"}, "invalid", None),
        ("memories", {"text": "x", "memory_type": "procedural", "steps": [{}]}, "invalid", None),
        ("memories", {"text": "x", "memory_type": "procedural", "steps": [3]}, "invalid", None),
        ("memories", {"text": "x", "memory_type": "semantic", "metadata": []}, "invalid", None),
        ("memories", [], "invalid", None),
    ],
)
def test_bad_input_is_a_400_naming_the_field(api, alice_token, path, body, code, field):
    response = api.post(f"users/alice/{path}", body, token=alice_token)

    assert response.status_code == 400, response.content
    assert error_code(response) == code
    if field:
        assert field in response.json()["error"]["details"]


@pytest.mark.parametrize(
    ("path", "body", "code"),
    [
        ("memories", {"text": "x", "memory_type": "semantic", "supersedes": [MISSING]}, 404),
        ("memories", {"text": "x", "memory_type": "procedural", "contradiction": "harsh"}, 400),
        ("recall", {"query": "x", "since": "2026-02-01T00:00Z", "until": "2026-01-01T00:00Z"}, 400),
        ("recall", {"query": "   "}, 400),
        (f"procedures/{MISSING}/outcome", {"success": True}, 404),
        (f"procedures/{MISSING}/outcome", {"success": True, "refined_steps": []}, 400),
    ],
)
def test_service_rules_answer_in_the_shared_shape(api, alice_token, path, body, code):
    response = api.post(f"users/alice/{path}", body, token=alice_token)

    assert response.status_code == code, response.content
    error_code(response)


def test_text_over_the_service_limit_is_a_400_from_the_service(api, alice_token, settings):
    settings.ATLAS_MAX_MEMORY_CHARS = 100

    response = api.post(
        "users/alice/memories", {"text": "x" * 101, "memory_type": "semantic"}, token=alice_token
    )

    assert response.status_code == 400 and error_code(response) == "text_too_long"


@pytest.mark.parametrize(
    ("raw", "status", "code"),
    [('{"text": ', 400, "parse_error"), ("[1, 2", 400, "parse_error"), ("", 400, "invalid")],
)
def test_malformed_json_is_a_400(api, alice_token, raw, status, code):
    response = api.post("users/alice/memories", raw=raw, token=alice_token)

    assert response.status_code == status and error_code(response) == code


def test_a_body_that_is_not_json_is_a_415(api, alice_token):
    response = api.client.post(
        "/api/v1/users/alice/recall",
        data="query=x",
        content_type="application/x-www-form-urlencoded",
        HTTP_AUTHORIZATION=f"Bearer {alice_token}",
    )

    assert response.status_code == 415 and error_code(response) == "unsupported_media_type"


def test_unknown_ids_and_paths_are_404(api, alice_token, acme):
    memory = api.get(f"users/alice/memories/{MISSING}", token=alice_token)
    history = api.get(f"users/alice/memories/{MISSING}/history", token=alice_token)
    catalog = api.delete("catalog/nope", token=tenant_token(acme, allow_catalog=True))

    for response in (memory, history, catalog):
        assert response.status_code == 404 and error_code(response) == "memory_not_found"


def test_a_bad_catalog_cursor_or_limit_is_a_400(api, acme):
    token = tenant_token(acme, allow_catalog=True)

    for query in ("after=not-a-cursor", "after=WyJ4IiwgInkiXQ", "limit=0", "limit=abc"):
        response = api.get(f"catalog?{query}", token=token)
        assert response.status_code == 400, query
        error_code(response)


def test_an_oversized_body_is_a_413(api, alice_token, settings):
    settings.ATLAS_MAX_REQUEST_BYTES = 1024

    response = api.post(
        "users/alice/memories", {"text": "x" * 2000, "memory_type": "semantic"}, token=alice_token
    )

    assert response.status_code == 413 and error_code(response) == "request_too_large"
    assert "1024" in response.json()["error"]["message"]


def test_the_default_limit_is_256_kib(api, alice_token):
    response = api.post("users/alice/recall", {"query": "x" * 300_000}, token=alice_token)

    assert response.status_code == 413


def test_past_the_rate_limit_it_is_a_429_with_retry_after(api, alice_token, settings):
    settings.ATLAS_RATE_RECALL = "2/min"

    answers = [api.post("users/alice/recall", {"query": "x"}, token=alice_token) for _ in range(3)]
    write = api.post(
        "users/alice/memories", {"text": "x", "memory_type": "semantic"}, token=alice_token
    )

    assert [r.status_code for r in answers] == [200, 200, 429]
    assert error_code(answers[2]) == "throttled"
    assert 0 < int(answers[2]["Retry-After"]) <= 60
    assert write.status_code == 201  # writes have their own bucket


def test_rate_limits_are_per_token(api, alice, settings):
    settings.ATLAS_RATE_WRITE = "1/min"
    from tests.atlas_server.conftest import user_token

    first, second = user_token(alice), user_token(alice)
    body = {"text": "x", "memory_type": "semantic"}

    assert api.post("users/alice/memories", body, token=first).status_code == 201
    assert api.post("users/alice/memories", body, token=first).status_code == 429
    assert api.post("users/alice/memories", body, token=second).status_code == 201


def test_an_unknown_api_path_is_a_json_404(api, alice_token):
    for path in ("nope", "users/alice/memories/x/y/z", "catalog/bad%20id"):
        response = api.get(path, token=alice_token)
        assert response.status_code == 404 and error_code(response) == "not_found", path


def test_a_method_an_endpoint_lacks_is_a_405(api, alice_token):
    response = api.call("PATCH", "users/alice/recall", {"query": "x"}, token=alice_token)

    assert response.status_code == 405 and error_code(response) == "method_not_allowed"


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("memories", {"text": "tea\u0000time", "memory_type": "semantic"}),
        (
            "memories",
            {"text": "x", "memory_type": "procedural", "steps": [{"instruction": "a\u0000"}]},
        ),
        ("turns", {"text": "hello", "session_id": "s\u0000"}),
        ("memories", {"text": "x", "memory_type": "semantic", "metadata": {"k\u0000": 1}}),
    ],
)
def test_a_nul_character_anywhere_is_a_400_and_nothing_is_written(api, alice_token, path, body):
    response = api.post(
        f"users/alice/{path}", body, token=alice_token, headers={"Idempotency-Key": "nul-1"}
    )

    assert response.status_code == 400, response.content
    assert error_code(response) == "nul_character"
    assert "\\u0000" in response.json()["error"]["message"]
    listed = api.post("users/alice/recall", {"query": "tea time hello"}, token=alice_token)
    assert listed.json()["hits"] == []


@pytest.mark.parametrize(
    ("path", "body", "where"),
    [
        ("memories", {"text": "tea \ud800 time", "memory_type": "semantic"}, "body.text"),
        (
            "memories",
            {"text": "x", "memory_type": "semantic", "metadata": {"k": ["\udfff"]}},
            "body.metadata.k[0]",
        ),
        ("memories", {"text": "x", "memory_type": "semantic", "metadata": {"\ud800": 1}}, "key"),
        ("turns", {"text": "hello", "session_id": "s\udc00"}, "body.session_id"),
    ],
)
def test_a_lone_surrogate_anywhere_is_a_400_and_nothing_is_written(
    api, alice_token, path, body, where
):
    """A ``\\ud800`` escape that is not half of a pair: stored, it could never be written out
    again (responses, the user's export), so it is refused where text enters."""
    response = api.post(
        f"users/alice/{path}", body, token=alice_token, headers={"Idempotency-Key": "sur-1"}
    )

    assert response.status_code == 400, response.content
    assert error_code(response) == "surrogate"
    assert where in response.json()["error"]["message"]
    listed = api.post("users/alice/recall", {"query": "tea time hello"}, token=alice_token)
    assert listed.json()["hits"] == []


def test_an_escaped_surrogate_pair_is_the_character_it_spells(api, alice_token):
    response = api.post(
        "users/alice/memories",
        {"text": "party \U0001f600", "memory_type": "semantic"},
        token=alice_token,
    )  # json.dumps writes it as the pair \ud83d\ude00

    assert response.status_code == 201, response.content
    assert response.json()["text"] == "party \U0001f600"


def test_the_services_refuse_nul_text_from_any_interface(alice):
    from atlas_platform.exceptions import ValidationError
    from memory.services.writes import memory_write

    with pytest.raises(ValidationError) as refused:
        memory_write(user=alice, text="a\u0000b", memory_type="semantic")

    assert refused.value.code == "nul_character"
    with pytest.raises(ValidationError) as refused:
        memory_write(user=alice, text="a\ud800b", memory_type="semantic")
    assert refused.value.code == "surrogate"


SECRET = "internal detail: password=hunter2 at 10.0.0.7:9200"


def test_an_unhandled_error_is_a_json_500_with_the_request_id_and_no_exception_text(
    api, alice_token, monkeypatch, caplog
):
    from memory.api import views

    def broken(**kwargs):
        raise RuntimeError(SECRET)

    monkeypatch.setattr(views, "memory_recall", broken)

    with caplog.at_level("ERROR", logger="atlas_platform.middleware"):
        response = api.post(
            "users/alice/recall",
            {"query": "x"},
            token=alice_token,
            headers={"X-Request-ID": "trace-500-abcd"},
        )

    assert response.status_code == 500 and response["Content-Type"] == "application/json"
    assert error_code(response) == "internal_error"
    assert response.json()["error"]["request_id"] == "trace-500-abcd"
    assert response["X-Request-ID"] == "trace-500-abcd"
    text = response.content.decode()
    assert SECRET not in text and "RuntimeError" not in text
    logged = [r for r in caplog.records if r.exc_info]
    assert logged and SECRET in str(logged[0].exc_info[1])  # the traceback went to the log


def test_an_unhandled_error_in_a_write_releases_its_idempotency_key(api, alice_token, monkeypatch):
    from memory.api import views

    body = {"text": "x", "memory_type": "semantic"}
    headers = {"Idempotency-Key": "boom-1"}
    with monkeypatch.context() as patched:
        patched.setattr(views, "memory_write", lambda **kw: (_ for _ in ()).throw(KeyError(SECRET)))
        failed = api.post("users/alice/memories", body, token=alice_token, headers=headers)

    retried = api.post("users/alice/memories", body, token=alice_token, headers=headers)

    assert failed.status_code == 500 and error_code(failed) == "internal_error"
    assert SECRET not in failed.content.decode()
    assert retried.status_code == 201  # the failed attempt did not keep the key


def test_a_dependency_failure_is_a_503_without_the_dependencys_words(api, alice_token, monkeypatch):
    from memory.api import views
    from memory.errors import MemoryStoreUnavailable

    def unavailable(**kwargs):
        raise MemoryStoreUnavailable(f"The memory store failed: {SECRET} {{'text': 'a doc'}}")

    monkeypatch.setattr(views, "memory_recall", unavailable)

    response = api.post("users/alice/recall", {"query": "x"}, token=alice_token)

    assert response.status_code == 503 and error_code(response) == "memory_store_unavailable"
    assert response.json()["error"]["message"] == MemoryStoreUnavailable.public_message
    assert SECRET not in response.content.decode() and "a doc" not in response.content.decode()


@pytest.mark.parametrize(
    ("error", "code"),
    [
        ("memory.embedding.EmbeddingError", "embedding_unavailable"),
        ("memory.rerank.RerankError", "reranker_unavailable"),
        ("atlas_platform.exceptions.ClusterUnavailable", "cluster_unavailable"),
    ],
)
def test_every_adapter_error_is_a_503_of_the_family(api, alice_token, monkeypatch, error, code):
    from importlib import import_module

    from atlas_platform.exceptions import AtlasError, Unavailable
    from memory.api import views

    module, name = error.rsplit(".", 1)
    cls = getattr(import_module(module), name)

    def failing(**kwargs):
        raise cls(SECRET)

    monkeypatch.setattr(views, "memory_recall", failing)

    response = api.post("users/alice/recall", {"query": "x"}, token=alice_token)

    assert issubclass(cls, Unavailable) and issubclass(cls, AtlasError)
    assert response.status_code == 503 and error_code(response) == code
    assert SECRET not in response.content.decode()


def test_django_s_own_refusals_under_api_are_json(api, alice_token, settings):
    settings.ALLOWED_HOSTS = ["testserver"]

    bad_host = api.client.get("/api/v1/users/alice/memories/x", HTTP_HOST="evil.example")

    assert bad_host.status_code == 400 and bad_host["Content-Type"] == "application/json"
    assert error_code(bad_host) == "bad_request"


def test_errors_outside_api_keep_django_s_pages(client, db):
    response = client.get("/no-such-page")

    assert response.status_code == 404 and "json" not in response["Content-Type"]


@pytest.mark.parametrize("user_id", ["bob%00", "%00", "bob%00x", "b%20ob"])
def test_a_path_user_id_that_no_user_can_have_is_a_404(api, acme, bob, user_id):
    """A NUL byte in a path user id used to reach PostgreSQL (500)."""
    token = tenant_token(acme)
    response = api.post(f"users/{user_id}/recall", {"query": "anything"}, token=token)
    assert response.status_code == 404
    assert error_code(response) == "user_not_found"


def test_the_bearer_scheme_is_case_insensitive_as_on_mcp(api, alice_token):
    for scheme in ("bearer", "BEARER", "Bearer"):
        response = api.get("token", headers={"Authorization": f"{scheme} {alice_token}"})
        assert response.status_code == 200, scheme


def test_the_acting_token_does_not_outlive_its_request(api, alice_token):
    from atlas_platform.context import SYSTEM, current_actor

    assert api.get("token", token=alice_token).status_code == 200
    assert current_actor() == SYSTEM  # the serving thread is back to no caller
