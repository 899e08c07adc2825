"""Shared fixtures: the named actors (Acme with Alice and Bob, Globex with Charlie), operators,
and the real services. With ATLAS_REQUIRE_SERVICES=1 (CI) a missing service fails the test
instead of skipping it."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections import Counter
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


def _cleanup_client() -> Any:
    """A client for the session's own housekeeping (None without a cluster configured)."""
    url = os.environ.get("ATLAS_ES_URL", "")
    if not url:
        return None
    from elasticsearch import Elasticsearch

    return Elasticsearch(
        url,
        basic_auth=(
            os.environ.get("ATLAS_ES_USERNAME", ""),
            os.environ.get("ATLAS_ES_PASSWORD", ""),
        ),
        request_timeout=30,
    )


# The most shards the cluster held at the end of a test module (every session on the node
# counted), reported at the end of the run: tenant uids are random, so each ES test makes
# indices of its own, and they are removed module by module to keep the node far from
# ``cluster.max_shards_per_node``.
SHARDS: dict[str, int] = {"peak": 0, "modules": 0}


@pytest.fixture(scope="module", autouse=True)
def _es_indices_per_module(es_index_prefix: str) -> Iterator[None]:
    yield
    client = _cleanup_client()
    if client is None:
        return
    with contextlib.suppress(Exception):  # housekeeping: never fails a test
        active = int(client.cluster.health()["active_shards"])
        SHARDS["peak"] = max(SHARDS["peak"], active)
        SHARDS["modules"] += 1
        # The session's indices only (templates stay: later tests' indices are made from them).
        client.indices.delete(
            index=f"{es_index_prefix}-*", allow_no_indices=True, ignore_unavailable=True
        )


@pytest.fixture(scope="session", autouse=True)
def _es_cleanup(es_index_prefix: str) -> Iterator[None]:
    yield
    client = _cleanup_client()
    if client is None:
        return
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
    # The named tenants have one operator each: four eyes (on by default for a new tenant,
    # tests/erasure/test_four_eyes.py) is turned on by the tests that are about it.
    return Tenant.objects.create(slug="acme", name="Acme", erasure_requires_second_operator=False)


@pytest.fixture
def globex(db: None) -> Tenant:
    return Tenant.objects.create(
        slug="globex", name="Globex", erasure_requires_second_operator=False
    )


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


@pytest.fixture(scope="session")
def _tombstones_dir(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return tmp_path_factory.mktemp("tombstones")


@pytest.fixture(autouse=True)
def _session_tombstones(settings: Any, _tombstones_dir: Any) -> None:
    """The tombstone log in the session's own directory, never the checkout's var/."""
    settings.ATLAS_TOMBSTONES_PATH = str(_tombstones_dir / "tombstones.sqlite3")


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


# --- parallel workers (pytest-xdist, `make test` runs two: --dist loadgroup) ----------------
@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups into the node ids
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests go to whichever worker is free, but for those that share something costly: the
    fault suite (its dedicated stack) runs on one worker, and a module with a module-scoped
    fixture (a browser, Claude Code, a Celery worker) on one worker, so it starts once."""
    _unique_node_ids(items)
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        if module.startswith("tests/faults/"):
            _group(item, "faults")
        elif _uses_a_module_fixture(item):
            _group(item, module)


def _group(item: pytest.Item, name: str) -> None:
    """What ``--dist loadgroup`` does with an ``xdist_group`` mark (a node id ending in
    ``@name``), done here: pytest 9.2 keeps node ids structured, and the assignment xdist 3.8
    makes to the old string attribute no longer changes the id, so its groups fell apart."""
    item.add_marker(pytest.mark.xdist_group(name))
    if "@" not in item.nodeid:
        _set_node_id(item, f"{item.nodeid}@{name}")


def _set_node_id(item: pytest.Item, nodeid: str) -> None:
    try:
        from _pytest.nodeid import NodeId
    except ImportError:  # pytest before 9.2: the id is the string itself
        setattr(item, "_nodeid", nodeid)  # noqa: B010 - a private attribute of that pytest
    else:
        item._id = NodeId.parse(nodeid)


def _unique_node_ids(items: list[pytest.Item]) -> None:
    """Schemathesis gives each API operation's test the function's node id; xdist's schedulers
    key work by node id, and would run one of them. Each takes its name (which names the
    operation) instead."""
    seen = Counter(item.nodeid for item in items)
    for item in items:
        if seen[item.nodeid] > 1 and "::" in item.nodeid:
            _set_node_id(item, f"{item.nodeid.rsplit('::', 1)[0]}::{item.name}")


def _uses_a_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(
        definition.scope in ("module", "package", "class")
        for name, definitions in info.name2fixturedefs.items()
        if name != "_es_indices_per_module"
        for definition in definitions
    )


# --- the run's report: the cluster's shards (the slowest tests come from --durations) -------
def pytest_sessionfinish(session: pytest.Session) -> None:
    output = getattr(session.config, "workeroutput", None)
    if output is not None:  # an xdist worker: the controller reports
        output["atlas_shards"] = dict(SHARDS)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    shards = getattr(node, "workeroutput", {}).get("atlas_shards", {})
    SHARDS["peak"] = max(SHARDS["peak"], int(shards.get("peak", 0)))
    SHARDS["modules"] += int(shards.get("modules", 0))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if getattr(terminalreporter.config, "workerinput", None) is not None:
        return
    client = _cleanup_client()
    if client is None:
        return
    try:
        now = int(client.cluster.health()["active_shards"])
        limit = client.cluster.get_settings(include_defaults=True, flat_settings=True)
        per_node = next(
            (
                part[key]
                for part in (limit["persistent"], limit["transient"], limit["defaults"])
                for key in ("cluster.max_shards_per_node",)
                if key in part
            ),
            "?",
        )
    except Exception as exc:  # a report line, never a failure
        terminalreporter.write_line(f"atlas: the cluster's shard count is unknown ({exc!r})")
        return
    terminalreporter.write_line(
        f"atlas: Elasticsearch shards: at most {SHARDS['peak']} at the end of a test module "
        f"({SHARDS['modules']} modules), {now} at the end of the run "
        f"(cluster.max_shards_per_node {per_node})"
    )
