"""The platform refuses to start on an index prefix that holds another deployment's indices:
the Django system check (``manage.py check``, ``runserver``, ``migrate``) and the served entry
points. An unreachable cluster does not keep it down (that is ``/readyz``'s business)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from atlas_platform.cluster import Cluster, ClusterConfig
from memory.checks import check_index_prefix
from memory.services.startup import deployment_conflict, refuse_foreign_indices

ROOT = Path(__file__).resolve().parents[3]
OTHER = "other-deployment-7f3a"


@pytest.fixture
def foreign_prefix(es: ClusterConfig, settings) -> str:
    """A prefix whose index template (and one index) another deployment made."""
    prefix = f"{es.index_prefix}-foreign"
    from memory.engine.elasticsearch.client import Connection
    from memory.engine.elasticsearch.setup import ensure_ready

    config = dataclasses.replace(es, index_prefix=prefix)
    ensure_ready(Connection(config=config, keys=None, deployment=OTHER), dims=8)
    client = Cluster(config).client
    if not client.indices.exists(index=config.tenant_index("a" * 32)):  # one per session
        client.indices.create(index=config.tenant_index("a" * 32))
    settings.ATLAS_MEMORY_BACKEND = "elasticsearch"
    return prefix


@pytest.mark.django_db
def test_a_prefix_of_another_deployment_fails_the_check_with_what_to_do(
    es, foreign_prefix, settings
):
    settings.ATLAS_ES_INDEX_PREFIX = foreign_prefix

    message = deployment_conflict()

    assert message is not None
    assert repr(foreign_prefix) in message and repr(OTHER) in message
    assert settings.ATLAS_DEPLOYMENT_ID in message
    assert "ATLAS_ES_INDEX_PREFIX" in message and "ATLAS_DEPLOYMENT_ID" in message
    errors = check_index_prefix()
    assert [e.id for e in errors] == ["atlas.E001"] and errors[0].msg == message
    with pytest.raises(ImproperlyConfigured, match="another deployment"):
        refuse_foreign_indices()


@pytest.mark.django_db
def test_the_own_prefix_and_an_unreachable_cluster_pass(es, foreign_prefix, settings):
    settings.ATLAS_DEPLOYMENT_ID = OTHER  # the deployment these indices are of
    settings.ATLAS_ES_INDEX_PREFIX = foreign_prefix
    assert deployment_conflict() is None
    assert check_index_prefix() == []

    settings.ATLAS_DEPLOYMENT_ID = "me"
    settings.ATLAS_ES_URL = "http://127.0.0.1:9"  # nothing listens: no proof either way
    assert deployment_conflict() is None
    refuse_foreign_indices()  # returns: the start goes on; /readyz reports the cluster


@pytest.mark.django_db
def test_indices_without_a_deployment_id_warn_but_do_not_refuse_the_start(es, settings):
    """A template made before deployment ids proves nothing about whose it is."""
    prefix = f"{es.index_prefix}-unstamped"
    from memory.engine.elasticsearch.client import Connection
    from memory.engine.elasticsearch.setup import ensure_ready

    config = dataclasses.replace(es, index_prefix=prefix)
    ensure_ready(Connection(config=config, keys=None, deployment=""), dims=8)
    settings.ATLAS_MEMORY_BACKEND = "elasticsearch"
    settings.ATLAS_ES_INDEX_PREFIX = prefix

    assert deployment_conflict() is None
    refuse_foreign_indices()  # starts
    [warning] = check_index_prefix()
    assert warning.id == "atlas.W001" and "without a deployment id" in warning.msg


def run(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - our own interpreter and code
        [sys.executable, *args],
        cwd=ROOT,
        env={**os.environ, "ATLAS_MEMORY_BACKEND": "elasticsearch", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_manage_py_check_and_the_wsgi_entry_refuse_a_foreign_prefix(es, foreign_prefix):
    env = {
        "ATLAS_ES_URL": es.url,
        "ATLAS_ES_USERNAME": es.username,
        "ATLAS_ES_PASSWORD": es.password,
        "ATLAS_ES_INDEX_PREFIX": foreign_prefix,
        "ATLAS_DEPLOYMENT_ID": "this-deployment",
    }

    checked = run(["manage.py", "check"], **env)
    served = run(["-c", "import atlas_server.wsgi"], **env)

    assert checked.returncode != 0
    assert "atlas.E001" in checked.stderr and repr(OTHER) in checked.stderr
    assert "ATLAS_ES_INDEX_PREFIX" in checked.stderr
    assert served.returncode != 0
    assert "ImproperlyConfigured" in served.stderr and repr(foreign_prefix) in served.stderr

    own = run(["manage.py", "check"], **{**env, "ATLAS_DEPLOYMENT_ID": OTHER})
    down = run(["manage.py", "check"], **{**env, "ATLAS_ES_URL": "http://127.0.0.1:9"})
    assert own.returncode == 0, own.stderr
    assert down.returncode == 0, down.stderr
