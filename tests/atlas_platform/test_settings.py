"""Production settings refuse to start without their secrets; secrets may come from files."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

ROOT = Path(__file__).resolve().parents[2]


def boot(tmp_path: Path, code: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ATLAS_", "SECRET_KEY", "ALLOWED_HOSTS", "DJANGO_", "OTEL_"))
    }
    clean.update(
        {"ATLAS_VAR_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "atlas_platform.settings", **env}
    )
    code = code or (
        "import django; django.setup(); from django.conf import settings; "
        "print(settings.DEBUG, settings.ALLOWED_HOSTS)"
    )
    return subprocess.run(  # noqa: S603 - our own interpreter and code
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
    )


PROD = {
    "ATLAS_ENV": "production",
    "SECRET_KEY": "s" * 50,
    "ALLOWED_HOSTS": "atlas.example",
    "ATLAS_RECEIPT_KEY": "r" * 50,
}


@pytest.mark.parametrize(
    "missing", ["SECRET_KEY", "ALLOWED_HOSTS", "ATLAS_ENCRYPTION_KEY", "ATLAS_RECEIPT_KEY"]
)
def test_production_refuses_to_start_without_a_required_secret(tmp_path, missing):
    env = {**PROD, "ATLAS_ENCRYPTION_KEY": Fernet.generate_key().decode()}
    env.pop(missing)

    result = boot(tmp_path, **env)

    assert result.returncode != 0
    assert missing in result.stderr
    assert not (tmp_path / "secret_key").exists()


def test_production_starts_with_secrets_from_files(tmp_path):
    key_file = tmp_path / "enc"
    key_file.write_text(Fernet.generate_key().decode())
    secret_file = tmp_path / "secret"
    secret_file.write_text("f" * 50)

    result = boot(
        tmp_path,
        ATLAS_ENV="production",
        ALLOWED_HOSTS="atlas.example",
        SECRET_KEY_FILE=str(secret_file),
        ATLAS_ENCRYPTION_KEY_FILE=str(key_file),
        ATLAS_RECEIPT_KEY_FILE=str(secret_file),
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False ['atlas.example']"


def test_development_generates_per_checkout_secrets(tmp_path):
    result = boot(tmp_path)

    assert result.returncode == 0, result.stderr
    assert (tmp_path / "secret_key").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "encryption_key").exists()


@pytest.mark.parametrize("module", ["atlas_server.asgi", "atlas_server.wsgi"])
def test_the_served_app_imports_in_a_fresh_interpreter(tmp_path, module):
    """What uvicorn / gunicorn do first; import cycles hidden by the test run's import order
    (a DRF setting naming a class in a module that imports DRF's views) show up only here."""
    code = (
        f"import {module} as served, rest_framework.views as views; "
        "print(type(served.application).__name__, views.APIView.parser_classes[0].__name__)"
    )

    result = boot(tmp_path, code=code)

    assert result.returncode == 0, result.stderr
    assert "StrictJSONParser" in result.stdout


def test_the_asgi_app_loads_the_embedder_and_freezes_what_start_up_built(tmp_path):
    """The first request does not pay for the model, and the cycle collector never walks the
    start-up objects again: under load, full collections of them held the GIL for 100-200 ms
    (docs/performance.md)."""
    code = (
        "import gc, atlas_server.asgi, memory.embedding as e; "
        "print(gc.get_freeze_count(), e.default_embedder.cache_info().currsize)"
    )

    result = boot(tmp_path, code=code)

    assert result.returncode == 0, result.stderr
    frozen, embedders_loaded = map(int, result.stdout.split())
    assert frozen > 100_000
    assert embedders_loaded == 1


POOL_PROBE = """
import django; django.setup()
from django.db import connection
pids = []
for _ in range(6):
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pids.append(cursor.fetchone()[0])
    connection.close()  # what Django does at the end of every ASGI request
print(connection.pool is not None, len(set(pids)))
"""


@pytest.mark.parametrize(("pool_max", "pooled"), [("1", True), ("0", False)])
def test_postgresql_connections_are_pooled_across_requests(tmp_path, pool_max, pooled):
    from tests.conftest import service_missing

    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        service_missing("PostgreSQL (DATABASE_URL)")

    result = boot(tmp_path, POOL_PROBE, ATLAS_DB_POOL_MIN="1", ATLAS_DB_POOL_MAX=pool_max)

    assert result.returncode == 0, result.stderr
    is_pooled, backends = result.stdout.split()
    assert is_pooled == str(pooled)
    # Six "requests": pooled (one connection at most), they all reuse it; unpooled, each
    # opened a connection (a new server process) of its own.
    assert int(backends) == (1 if pooled else 6)


def test_log_level_takes_any_case_and_refuses_an_unknown_level(tmp_path):
    """gunicorn reads the same LOG_LEVEL in lower case; Django's logging wants upper case."""
    code = (
        "import django; django.setup(); from django.conf import settings; print(settings.LOG_LEVEL)"
    )

    lower = boot(tmp_path, code=code, LOG_LEVEL="warning")
    unknown = boot(tmp_path, code=code, LOG_LEVEL="loud")

    assert lower.returncode == 0, lower.stderr
    assert lower.stdout.split() == ["WARNING"]
    assert unknown.returncode != 0
    assert "LOG_LEVEL='LOUD'" in unknown.stderr and "WARNING" in unknown.stderr


def test_recall_settings_are_one_typed_group_checked_at_start_up(tmp_path):
    code = (
        "import django; django.setup(); from django.conf import settings; "
        "r = settings.ATLAS_RECALL; print(type(r).__name__, r.candidates, r.session_spread)"
    )

    default = boot(tmp_path, code=code)
    set_ = boot(tmp_path, code=code, ATLAS_RECALL_CANDIDATES="80")
    bad = boot(tmp_path, code=code, ATLAS_RECALL_SESSION_SPREAD="2")

    assert default.stdout.split() == ["RecallSettings", "40", "0.25"], default.stderr
    assert set_.stdout.split() == ["RecallSettings", "80", "0.25"], set_.stderr
    assert bad.returncode != 0
    assert "ATLAS_RECALL_SESSION_SPREAD must be from 0 to 1, not 2.0" in bad.stderr


MODELS = (
    "import django; django.setup(); from django.conf import settings; "
    "e, r = settings.ATLAS_EMBEDDING, settings.ATLAS_RERANKING; "
    "c = settings.ATLAS_CHAT_MODEL; "
    "print(type(e).__name__, e.kind, e.threads, e.dims, type(r).__name__, r.kind, r.threads, "
    "type(c).__name__, c.model or '-', c.timeout_s)"
)


def test_model_settings_are_typed_groups_read_from_the_same_variables(tmp_path):
    default = boot(tmp_path, code=MODELS)
    set_ = boot(
        tmp_path,
        code=MODELS,
        ATLAS_EMBEDDER="openai",
        ATLAS_EMBEDDER_URL="http://127.0.0.1:9/v1",
        ATLAS_EMBEDDER_MODEL="m",
        ATLAS_EMBEDDER_DIMS="768",
        ATLAS_EMBEDDER_THREADS="2",
        ATLAS_RERANKER="onnx",
        ATLAS_RERANKER_MODEL_PATH="/models/ce.onnx",
        ATLAS_RERANKER_THREADS="4",
        ATLAS_CONSOLIDATION_MODEL="small",
        ATLAS_CONSOLIDATION_TIMEOUT_S="30",
    )

    assert default.stdout.split() == [
        "EmbedderSettings", "local", "1", "384", "RerankerSettings", "none", "2",
        "ChatModelSettings", "-", "60.0",
    ], default.stderr  # fmt: skip
    assert set_.stdout.split() == [
        "EmbedderSettings", "openai", "2", "768", "RerankerSettings", "onnx", "4",
        "ChatModelSettings", "small", "30.0",
    ], set_.stderr  # fmt: skip


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"ATLAS_EMBEDDER_THREADS": "0"}, "ATLAS_EMBEDDER_THREADS must be from 1 to 64, not 0"),
        ({"ATLAS_EMBEDDER": "openai"}, "ATLAS_EMBEDDER=openai needs ATLAS_EMBEDDER_URL"),
        ({"ATLAS_RERANKER": "cohere"}, "ATLAS_RERANKER must be none, http, es-inference or onnx"),
        ({"ATLAS_RERANKER": "http"}, "ATLAS_RERANKER=http needs ATLAS_RERANKER_URL"),
        ({"ATLAS_RERANKER_BATCH": "0"}, "ATLAS_RERANKER_BATCH must be from 1 to 1024, not 0"),
        (
            {"ATLAS_CONSOLIDATION_JSON_ATTEMPTS": "0"},
            "ATLAS_CONSOLIDATION_JSON_ATTEMPTS must be from 1 to 10, not 0",
        ),
    ],
)
def test_a_bad_model_setting_stops_start_up_naming_the_variable(tmp_path, env, message):
    refused = boot(tmp_path, code=MODELS, **env)

    assert refused.returncode != 0
    assert message in refused.stderr


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("ATLAS_RECALL_LEXICAL_WEIGHT", "confidence"),
        ("ATLAS_RECALL_WINDOW_DECAY", "false"),
        ("ATLAS_RECALL_TIME_ANCHOR", "clock"),
    ],
)
def test_a_retired_recall_setting_stops_start_up_and_names_the_plan_field(tmp_path, name, value):
    """Ignoring it would run another recall than the operator asked for."""
    refused = boot(tmp_path, **{name: value})

    assert refused.returncode != 0
    assert f"{name} is retired" in refused.stderr
    assert "RecallPlan." in refused.stderr


TRACING_PROBE = """
import django; django.setup()
from atlas_platform.cluster import Cluster, ClusterConfig
client = Cluster(ClusterConfig(url="http://127.0.0.1:9")).client
print(client._otel.enabled, client.options(api_key=("id", "secret"))._otel.enabled)
"""


def test_the_search_client_traces_only_when_asked(tmp_path):
    """No-op OpenTelemetry spans around every cluster request cost CPU for nothing."""
    default = boot(tmp_path, TRACING_PROBE)
    asked = boot(tmp_path, TRACING_PROBE, OTEL_PYTHON_INSTRUMENTATION_ELASTICSEARCH_ENABLED="true")

    assert default.returncode == 0, default.stderr
    assert default.stdout.split() == ["False", "False"]  # the writer and a scoped-key reader
    assert asked.stdout.split() == ["True", "True"]
