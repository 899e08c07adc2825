"""Request ids on every response and in the structured logs."""

import json
import logging

import pytest

from atlas_platform.logging import JsonFormatter, RequestIdFilter


def test_every_response_carries_a_request_id(client, db):
    first = client.get("/healthz")["X-Request-ID"]
    second = client.get("/healthz")["X-Request-ID"]

    assert len(first) == 32 and first != second


def test_a_well_formed_incoming_request_id_is_kept_and_a_bad_one_replaced(client, db):
    assert (
        client.get("/healthz", HTTP_X_REQUEST_ID="trace-1234abcd")["X-Request-ID"]
        == "trace-1234abcd"
    )
    assert client.get("/healthz", HTTP_X_REQUEST_ID="<script>")["X-Request-ID"] != "<script>"


@pytest.mark.parametrize("rid", ["", "req-0123456789"])
def test_log_lines_are_json_with_the_request_id(rid):
    from atlas_platform.context import request_id

    record = logging.LogRecord(
        "atlas.test", logging.INFO, __file__, 1, "hello %s", ("world",), None
    )
    record.tenant = "acme"
    with request_id(rid):
        RequestIdFilter().filter(record)
    line = json.loads(JsonFormatter().format(record))

    assert line["msg"] == "hello world" and line["level"] == "INFO" and line["tenant"] == "acme"
    assert line["request_id"] == (rid or None)


@pytest.mark.django_db
@pytest.mark.parametrize("debug", [True, False])
def test_unknown_api_paths_are_json_404s_and_the_root_leads_to_the_admin(client, settings, debug):
    settings.DEBUG = debug

    api_root = client.get("/api/v1/")
    unknown = client.get("/api/v1/nope/deeper")
    posted = client.post("/api/v1/nope", data="{}", content_type="application/json")
    root = client.get("/")

    for response in (api_root, unknown, posted):
        assert response.status_code == 404 and response["Content-Type"] == "application/json"
        assert response.json()["error"]["code"] == "not_found"
    assert root.status_code == 302 and root["Location"] == "/admin/"
