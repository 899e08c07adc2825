"""Shared fixtures: the named actors (Acme with Alice and Bob, Globex with Charlie), operators,
and the real services. With ATLAS_REQUIRE_SERVICES=1 (CI) a missing service fails the test
instead of skipping it."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from atlas_platform.cluster import ClusterConfig
from tenants.models import Operator, Tenant, User
from tenants.services.users import operator_create

REQUIRE_SERVICES = os.environ.get("ATLAS_REQUIRE_SERVICES") == "1"
PASSWORD = "correct-horse-battery-9"


def service_missing(what: str) -> None:
    """Skip locally, fail in CI: a service test must never silently not run there."""
    message = f"{what} is not available (run `make services`, then source .services/env)."
    if REQUIRE_SERVICES:
        pytest.fail(message)
    pytest.skip(message)


# --- Elasticsearch --------------------------------------------------------------------------
@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix: None) -> None:
    """Close any connection pool opened before the test database exists. Importing the served
    app during collection runs its start-up check, which reaches for the database (refused
    then); that opens the pool for the configured database, and Django's test-database setup
    renames the database without closing the pool, so every later connection (migrations
    included) would go to the real database while workers given the test database's name
    found it empty."""
    from django.db import connections

    for conn in connections.all():
        close_pool = getattr(conn, "close_pool", None)
        if close_pool is not None:
            close_pool()


@pytest.fixture(scope="session")
def es_index_prefix() -> str:
    """A private index prefix per test session, so runs never see each other's documents."""
    return f"atlas-test-{secrets.token_hex(4)}"


@pytest.fixture(scope="session")
def es_session_config(es_index_prefix: str) -> ClusterConfig:
    url = os.environ.get("ATLAS_ES_URL", "")
    if not url:
        service_missing("Elasticsearch (ATLAS_ES_URL)")
    config = ClusterConfig(
        url=url,
        username=os.environ.get("ATLAS_ES_USERNAME", ""),
        password=os.environ.get("ATLAS_ES_PASSWORD", ""),
        index_prefix=es_index_prefix,
    )
    from elasticsearch import Elasticsearch

    client = Elasticsearch(url, basic_auth=(config.username, config.password), request_timeout=10)
    try:
        client.cluster.health(wait_for_status="yellow", timeout="30s")
    except Exception as exc:  # any failure to reach it means "not available"
        service_missing(f"Elasticsearch at {url} ({exc!r})")
    return config


@pytest.fixture
def es(es_session_config: ClusterConfig, settings: Any) -> Iterator[ClusterConfig]:
    """Point the platform at the real cluster (with this session's index prefix)."""
    settings.ATLAS_ES_URL = es_session_config.url
    settings.ATLAS_ES_USERNAME = es_session_config.username
    settings.ATLAS_ES_PASSWORD = es_session_config.password
    settings.ATLAS_ES_API_KEY = ""
    settings.ATLAS_ES_INDEX_PREFIX = es_session_config.index_prefix
    # One deployment id for the session's indices (the database's own would be rolled back
    # with each test); worker subprocesses get the same (tests/celery_worker.py callers).
    settings.ATLAS_DEPLOYMENT_ID = f"test-{es_session_config.index_prefix}"
    yield es_session_config


@pytest.fixture(scope="session", autouse=True)
def _es_cleanup(es_index_prefix: str) -> Iterator[None]:
    yield
    url = os.environ.get("ATLAS_ES_URL", "")
    if not url:
        return
    from elasticsearch import Elasticsearch

    client = Elasticsearch(
        url,
        basic_auth=(
            os.environ.get("ATLAS_ES_USERNAME", ""),
            os.environ.get("ATLAS_ES_PASSWORD", ""),
        ),
        request_timeout=30,
    )
    with contextlib.suppress(Exception):  # best-effort cleanup of a throwaway prefix
        client.indices.delete(index=f"{es_index_prefix}-*", allow_no_indices=True)
    with contextlib.suppress(Exception):
        client.indices.delete_index_template(name=f"{es_index_prefix}-*")
    with contextlib.suppress(Exception):
        client.cluster.delete_component_template(name=f"{es_index_prefix}-*")


@pytest.fixture
def no_cluster(settings: Any) -> None:
    """The embedded default: no search cluster configured."""
    settings.ATLAS_ES_URL = ""


# --- named actors -----------------------------------------------------------------------------
@pytest.fixture
def acme(db: None) -> Tenant:
    return Tenant.objects.create(slug="acme", name="Acme")


@pytest.fixture
def globex(db: None) -> Tenant:
    return Tenant.objects.create(slug="globex", name="Globex")


@pytest.fixture
def alice(acme: Tenant) -> User:
    return User.objects.create(tenant=acme, external_id="alice")


@pytest.fixture
def bob(acme: Tenant) -> User:
    return User.objects.create(tenant=acme, external_id="bob")


@pytest.fixture
def charlie(globex: Tenant) -> User:
    return User.objects.create(tenant=globex, external_id="charlie")


def _operator(username: str, role: str, tenant: Tenant | None) -> Operator:
    return operator_create(username=username, password=PASSWORD, role=role, tenant=tenant)


@pytest.fixture
def platform_admin(db: None) -> Operator:
    return _operator("root-op", Operator.Role.PLATFORM_ADMIN, None)


@pytest.fixture
def acme_admin(acme: Tenant) -> Operator:
    return _operator("acme-admin", Operator.Role.TENANT_ADMIN, acme)


@pytest.fixture
def acme_auditor(acme: Tenant) -> Operator:
    return _operator("acme-auditor", Operator.Role.AUDITOR, acme)


@pytest.fixture
def globex_admin(globex: Tenant) -> Operator:
    return _operator("globex-admin", Operator.Role.TENANT_ADMIN, globex)


def login(operator: Operator) -> Client:
    client = Client()
    assert client.login(username=operator.account.get_username(), password=PASSWORD)
    return client


@pytest.fixture
def platform_client(platform_admin: Operator) -> Client:
    return login(platform_admin)


@pytest.fixture
def acme_client(acme_admin: Operator) -> Client:
    return login(acme_admin)


@pytest.fixture
def auditor_client(acme_auditor: Operator) -> Client:
    return login(acme_auditor)


@pytest.fixture(autouse=True)
def _no_recall_stats_from_other_tests() -> None:
    """Recall statistics wait in memory between batches; a test starts without another's."""
    from memory.services.recall_stats import recall_stats_discard

    recall_stats_discard()


@pytest.fixture(autouse=True)
def _no_scoped_keys_from_other_tests() -> None:
    """Processes keep users' scoped keys for a while; a test starts with none kept."""
    from memory.services.scoping import scoped_keys

    scoped_keys.clear()


@pytest.fixture(autouse=True)
def _fast_passwords(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def pytest_report_header(config: Any) -> list[str]:
    db = settings.DATABASES["default"]
    return [
        f"atlas: database={db['ENGINE'].rsplit('.', 1)[-1]} "
        f"es={os.environ.get('ATLAS_ES_URL') or '-'} "
        f"require_services={REQUIRE_SERVICES}"
    ]
