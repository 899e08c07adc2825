"""The archive indices' lifecycle policy (``deploy/elasticsearch/archive-ilm-policy.json``):
installed with an administrator's credential by ``manage.py es_platform_role`` (beside the
platform's role), where the cluster runs index lifecycle management.

The integ-test distribution (``make services``) has no ILM module (no handler for
``_ilm/status``) and no searchable snapshots: ``archive_policy_install`` reports that, installs
nothing, and the archive indices stay where they are made (``archive_tiers`` says which data
tiers the nodes hold). The platform reads ILM's status itself (``read_ilm``, nothing more) to
put a new archive index under the policy where there is one (``ilm_available``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from elasticsearch import ApiError, BadRequestError, Elasticsearch, NotFoundError

from atlas_platform.cluster import Cluster, cluster_call

POLICY_FILE = (
    Path(__file__).resolve().parents[1] / "deploy" / "elasticsearch" / "archive-ilm-policy.json"
)
DATA_TIERS = ("data_hot", "data_warm", "data_cold", "data_frozen")


def policy_name(prefix: str) -> str:
    return f"{prefix}-archive"


def archive_policy() -> dict[str, Any]:
    """The policy body (phases and ``_meta``)."""
    policy: dict[str, Any] = json.loads(POLICY_FILE.read_text())
    return policy


def ilm_available(client: Elasticsearch) -> bool:
    """Whether the cluster runs index lifecycle management (a 400 "no handler found": the
    module is absent; a 403: this credential may not read it, treated as absent)."""
    try:
        status = client.ilm.get_status()
    except (BadRequestError, NotFoundError):
        return False
    except ApiError as exc:
        if exc.status_code == 403:
            return False
        raise
    return bool(status.get("operation_mode"))


@dataclass(frozen=True)
class ArchiveTiers:
    """What the cluster offers the archive: ILM or not, the policy's phases it installed, the
    data tiers its nodes hold, and why there is no frozen phase."""

    ilm: bool
    installed: str | None  # the policy's name, None: not installed
    phases: list[str] = field(default_factory=list)
    node_tiers: list[str] = field(default_factory=list)
    frozen: str = ""

    def describe(self) -> str:
        tiers = ", ".join(t.removeprefix("data_") for t in self.node_tiers) or "none"
        if not self.ilm:
            return (
                f"no index lifecycle management on this cluster: archive indices stay on the "
                f"tier they are made on, without transitions (node tiers: {tiers}); {self.frozen}"
            )
        return (
            f"archive policy {self.installed}: {' -> '.join(self.phases)} (node tiers: "
            f"{tiers}); {self.frozen}"
        )


def archive_tiers(admin: Cluster) -> list[str]:
    """The data tier roles any node of the cluster holds."""
    nodes = cluster_call(
        "read node roles", lambda: admin.client.nodes.info(filter_path="nodes.*.roles")
    )
    roles = {role for node in nodes.body.get("nodes", {}).values() for role in node["roles"]}
    return [tier for tier in DATA_TIERS if tier in roles]


def archive_policy_install(admin: Cluster, *, prefix: str) -> ArchiveTiers:
    """Put the archive policy (idempotent) where the cluster has ILM; report what it has."""
    tiers = archive_tiers(admin)
    frozen = "no frozen phase: it needs searchable snapshots (an enterprise licence)"
    if not ilm_available(admin.client):
        return ArchiveTiers(ilm=False, installed=None, node_tiers=tiers, frozen=frozen)
    policy = archive_policy()
    name = policy_name(prefix)
    cluster_call(
        "put the archive lifecycle policy",
        lambda: admin.client.ilm.put_lifecycle(name=name, policy=policy),
    )
    return ArchiveTiers(
        ilm=True, installed=name, phases=list(policy["phases"]), node_tiers=tiers, frozen=frozen
    )
