"""The platform's least-privileged cluster role (``manage.py es_platform_role``), on the real
cluster, under a throwaway role and user name: the platform can do its work with it (its own
indices, templates and API keys) and nothing else (no other index, no security
administration, no other user's keys)."""

from __future__ import annotations

import io
import os
import secrets
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.management import call_command
from elasticsearch import AuthorizationException, Elasticsearch

from atlas_platform.platform_role import platform_role
from tests.conftest import service_missing


def admin_credentials() -> tuple[str, str]:
    user = os.environ.get("ATLAS_ES_ADMIN_USERNAME", "")
    password = os.environ.get("ATLAS_ES_ADMIN_PASSWORD", "")
    if not user and os.environ.get("ATLAS_ES_USERNAME") == "elastic":
        user, password = "elastic", os.environ.get("ATLAS_ES_PASSWORD", "")
    if not user:
        service_missing("an administrator's cluster credential (ATLAS_ES_ADMIN_USERNAME)")
    return user, password


@pytest.fixture
def role_user(es: Any, monkeypatch: Any) -> Iterator[tuple[str, str, str]]:
    name = f"atlas-test-role-{secrets.token_hex(4)}"
    password = secrets.token_urlsafe(18)
    admin_user, admin_password = admin_credentials()
    monkeypatch.setenv("ATLAS_ES_ADMIN_USERNAME", admin_user)
    monkeypatch.setenv("ATLAS_ES_ADMIN_PASSWORD", admin_password)
    monkeypatch.setenv("ATLAS_ES_PLATFORM_PASSWORD", password)
    out = io.StringIO()
    call_command(
        "es_platform_role", "--role", name, "--user", name, "--prefix", es.index_prefix, stdout=out
    )
    assert "are in place" in out.getvalue()
    assert "archive: " in out.getvalue()  # what the cluster offers the archive (ILM or not)
    yield name, password, es.index_prefix
    call_command("es_platform_role", "--role", name, "--user", name, "--remove", stdout=out)
    admin = Elasticsearch(es.url, basic_auth=(admin_user, admin_password))
    assert not admin.options(ignore_status=404).security.get_user(username=name).body


def test_the_role_holds_exactly_the_declared_privileges(es, role_user):
    name, _, prefix = role_user
    admin = Elasticsearch(es.url, basic_auth=admin_credentials())
    role = admin.security.get_role(name=name)[name]
    declared = platform_role(prefix)
    assert (
        sorted(role["cluster"])
        == sorted(declared["cluster"])
        == [
            "manage_index_templates",
            "manage_own_api_key",
            "monitor",
            "read_ilm",
        ]
    )
    assert [i["names"] for i in role["indices"]] == [[f"{prefix}-*"]]
    assert "all" not in role["indices"][0]["privileges"]


def test_the_platform_user_can_do_its_work_and_nothing_else(es, role_user):
    name, password, prefix = role_user
    client = Elasticsearch(es.url, basic_auth=(name, password))
    own = f"{prefix}-role-check"
    client.indices.create(index=own)
    client.index(index=own, id="1", document={"text": "x"}, refresh=True)
    key = client.security.create_api_key(
        name="role-check",
        expiration="1h",
        role_descriptors={"r": {"indices": [{"names": [own], "privileges": ["read"]}]}},
    )
    assert Elasticsearch(es.url, api_key=(key["id"], key["api_key"])).count(index=own)["count"] == 1
    client.security.invalidate_api_key(ids=[key["id"]], owner=True)
    client.indices.forcemerge(index=own, only_expunge_deletes=True)
    client.indices.delete(index=own)

    refused = {
        "another index": lambda: client.indices.create(index=f"other-{secrets.token_hex(3)}"),
        "security admin": lambda: client.security.put_role(name=f"{name}-x", cluster=["all"]),
        "other users' keys": lambda: client.security.get_api_key(),
        "a user": lambda: client.security.put_user(
            username=f"{name}-x", password="x" * 12, roles=["superuser"]
        ),
        "cluster settings": lambda: client.cluster.put_settings(
            transient={"cluster.routing.allocation.enable": "all"}
        ),
        "the security index": lambda: client.search(index=".security"),
    }
    for what, call in refused.items():
        with pytest.raises(AuthorizationException):
            call()
            pytest.fail(f"{what} was allowed")


def test_the_archive_policy_is_installed_where_the_cluster_runs_ilm_and_its_absence_said(es):
    from atlas_platform.archive_policy import (
        archive_policy,
        archive_policy_install,
        ilm_available,
        policy_name,
    )
    from atlas_platform.cluster import Cluster, ClusterConfig

    user, password = admin_credentials()
    admin = Cluster(ClusterConfig(url=es.url, username=user, password=password))
    tiers = archive_policy_install(admin, prefix=es.index_prefix)

    assert set(tiers.node_tiers) <= {"data_hot", "data_warm", "data_cold", "data_frozen"}
    assert "frozen" not in archive_policy()["phases"]
    assert "delete" not in archive_policy()["phases"]
    if ilm_available(admin.client):
        stored = admin.client.ilm.get_lifecycle(name=policy_name(es.index_prefix))
        assert list(stored[policy_name(es.index_prefix)]["policy"]["phases"]) == tiers.phases
        assert tiers.installed == policy_name(es.index_prefix)
        admin.client.ilm.delete_lifecycle(name=policy_name(es.index_prefix))
    else:  # the integ-test distribution: no ILM module, nothing installed, and it says so
        assert tiers.installed is None and tiers.phases == []
        assert "no index lifecycle management" in tiers.describe()
