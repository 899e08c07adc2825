"""The platform's least-privileged cluster role (``deploy/elasticsearch/platform-role.json``):
what ``deploy/services/up.sh`` creates for the test services and ``manage.py
es_platform_role`` creates on a production cluster, with an administrator's credential that
the platform itself never holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from atlas_platform.archive_policy import ArchiveTiers, archive_policy_install
from atlas_platform.cluster import Cluster, cluster_call

ROLE_FILE = Path(__file__).resolve().parents[1] / "deploy" / "elasticsearch" / "platform-role.json"


def platform_role(prefix: str) -> dict[str, Any]:
    """The role descriptor for deployments whose index prefix matches ``prefix``."""
    text = ROLE_FILE.read_text().replace("__PREFIX__", prefix)
    role: dict[str, Any] = json.loads(text)
    return role


def platform_role_apply(
    admin: Cluster, *, role: str, username: str, password: str, prefix: str
) -> ArchiveTiers:
    """Put the role and a native user holding only it (idempotent: both are replaced), and
    the archive indices' lifecycle policy where the cluster has ILM (what it has: returned)."""
    body = platform_role(prefix)
    cluster_call(
        "put the platform role",
        lambda: admin.client.security.put_role(
            name=role,
            cluster=body["cluster"],
            indices=body["indices"],
            description=body["description"],
            metadata=body["metadata"],
        ),
    )
    cluster_call(
        "put the platform user",
        lambda: admin.client.security.put_user(
            username=username, password=password, roles=[role], full_name="Atlas platform"
        ),
    )
    return archive_policy_install(admin, prefix=prefix)


def platform_role_remove(admin: Cluster, *, role: str, username: str) -> None:
    cluster_call(
        "delete the platform user",
        lambda: admin.client.options(ignore_status=404).security.delete_user(username=username),
    )
    cluster_call(
        "delete the platform role",
        lambda: admin.client.options(ignore_status=404).security.delete_role(name=role),
    )
