"""``manage.py bench_es_scale`` on the real cluster, tiny: the store grows to each size (the
documents are on the cluster, in the engine's index, recallable), every point has its figures."""

from __future__ import annotations

import json
import os
from io import StringIO

import pytest
from django.core.management import call_command

from atlas_platform.cluster import Cluster, ClusterConfig


@pytest.mark.django_db
def test_it_grows_one_users_store_and_many_tenants_and_reports_each_point(
    es, settings, tmp_path
) -> None:
    if not os.environ.get("ATLAS_ES_ADMIN_PASSWORD"):
        pytest.skip("needs the cluster's administrator (.services/env)")
    settings.ATLAS_MEMORY_BACKEND = "elasticsearch"
    out, path = StringIO(), tmp_path / "scale.json"

    call_command(
        "bench_es_scale",
        sizes="30,80",
        tenants=2,
        per_tenant=20,
        recalls=4,
        loaders=1,
        json_path=str(path),
        stdout=out,
    )

    report = json.loads(path.read_text())
    assert report["synthetic_vectors"] is True
    assert [p["memories"] for p in report["one_user"]] == [30, 80]
    assert report["tenants"]["tenants"] == 2 and report["tenants"]["memories"] == 40
    for point in [*report["one_user"], report["tenants"]]:
        assert point["recalls"] == 4 and point["recall_p50_ms"] > 0
        assert point["cluster_cpu_ms_per_recall"] >= 0
    admin = ClusterConfig(
        url=es.url, username="elastic", password=os.environ["ATLAS_ES_ADMIN_PASSWORD"]
    )
    client = Cluster(admin).client
    index = report["one_user"][-1]["index"]
    client.indices.refresh(index=index)
    assert client.count(index=index)["count"] == 80  # the catalog of a new tenant is empty
    assert "one user, 80 memories" in out.getvalue()
