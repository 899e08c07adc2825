"""``manage.py bench_es_scale``: Elasticsearch recall at scale, one user and many tenants.

    python manage.py bench_es_scale --sizes 10000,100000,1000000 --tenants 100 \\
        --per-tenant 10000 --recalls 100 --json var/bench-es-scale.json

One user's store grows to each size in turn (loaded once, added to, never reloaded), and at each
size ``--recalls`` recalls run through ``memory_recall`` (hybrid, no reranker: the query
embedded by the real embedder, the lexical and dense legs on the cluster); then ``--tenants``
tenants of one user each, ``--per-tenant`` memories apiece, and as many recalls spread over
them (the tenants run first, then the one user's sizes). Per point: recall p50 / p95 (wall),
this process's CPU per recall and the cluster's (the
nodes' ``process.cpu.total_in_millis`` over the recalls, divided by their number), with the
load average.

The load is synthetic and goes straight into the cluster: one real ``memory_write`` per user
makes its index (from the engine's template) and a document to copy; the rest are copies of
that document with a new id, a synthetic sentence and a **random unit vector** (not an
embedding), bulk-indexed into the same index with the same routing. Recall costs what it costs
on real vectors (the same HNSW search, the same filters); its quality is not measured here.
Run it against a cluster of its own (deploy/scaleout/README.md: ``cluster.sh up 1``), never the
shared test node: the documents are not removed afterwards.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from django.core.management.base import BaseCommand, CommandError

from lab.management.commands.bench import OBJECTS, SUBJECTS, bench_user, synthetic_text

Json = dict[str, Any]
BULK = 2000


def _loadavg() -> list[str]:
    return Path("/proc/loadavg").read_text().split()[:3]


class Command(BaseCommand):
    help = "Elasticsearch recall p50 and cluster CPU per recall at 10k..1M memories; JSON."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--sizes", default="10000,100000,1000000")
        parser.add_argument("--tenants", type=int, default=100)
        parser.add_argument("--per-tenant", type=int, default=10000)
        parser.add_argument("--recalls", type=int, default=100)
        parser.add_argument("--loaders", type=int, default=2, help="bulk requests in flight")
        parser.add_argument("--json", dest="json_path", default="")
        parser.add_argument("--seed", type=int, default=11)

    def handle(self, *args: Any, **options: Any) -> None:
        from django.conf import settings

        from atlas_platform.cluster import Cluster, ClusterConfig

        if not settings.ATLAS_ES_URL or settings.ATLAS_MEMORY_BACKEND != "elasticsearch":
            raise CommandError("Needs the elasticsearch backend (ATLAS_ES_URL of its own cluster).")
        admin = (
            os.environ.get("ATLAS_ES_ADMIN_USERNAME", ""),
            os.environ.get("ATLAS_ES_ADMIN_PASSWORD", ""),
        )
        if not all(admin):
            raise CommandError("Needs ATLAS_ES_ADMIN_USERNAME / _PASSWORD (index settings, loads).")
        # The administrator loads (refresh off while loading: the platform role may not).
        config = ClusterConfig(url=settings.ATLAS_ES_URL, username=admin[0], password=admin[1])
        self.client = Cluster(config).client.options(request_timeout=300)
        self.rng = random.Random(options["seed"])  # noqa: S311 - synthetic data
        self.np_rng = np.random.default_rng(options["seed"])
        self.loaders = options["loaders"]
        report: Json = {"synthetic_vectors": True, "one_user": [], "tenants": None}
        if options["tenants"]:
            started = time.perf_counter()
            users, indices = [], []
            for n in range(options["tenants"]):
                user, seed = self._user(f"esscale-t{n}")
                self._load(seed, options["per_tenant"] - 1)
                users.append(user)
                indices.append(seed["_index"])
            point = {
                "tenants": options["tenants"],
                "memories": options["tenants"] * options["per_tenant"],
                "load_s": round(time.perf_counter() - started, 1),
            }
            for index in indices:
                self._settle(index)
            point |= self._recalls(users, options["recalls"])
            report["tenants"] = point
            self._print(f"{options['tenants']} tenants x {options['per_tenant']}", point)
            self._save(report, options["json_path"])
        sizes = [int(s) for s in options["sizes"].split(",") if s.strip()]
        if sizes:
            user, seed = self._user("esscale")
            have = 1
            for size in sizes:
                started = time.perf_counter()
                self._load(seed, size - have)
                have = size
                point = {
                    "memories": size,
                    "index": seed["_index"],
                    "load_s": round(time.perf_counter() - started, 1),
                }
                point |= self._settle(seed["_index"])
                point |= self._recalls([user], options["recalls"])
                report["one_user"].append(point)
                self._print(f"one user, {size} memories", point)
                self._save(report, options["json_path"])
        self._save(report, options["json_path"])

    # ----------------------------------------------------------------------- load --

    def _user(self, slug: str) -> tuple[Any, Json]:
        """A new tenant and user, one real write, and that document as the cluster holds it."""
        from memory.public import memory_write

        user = bench_user(slug)
        written = memory_write(user=user, text=synthetic_text(self.rng), memory_type="semantic")
        hits = self.client.search(
            index=f"{self._prefix()}-t-*",
            query={"term": {"id": written.id}},
            size=1,
        )["hits"]["hits"]
        if not hits:
            raise CommandError("the written memory is not on the cluster")
        return user, hits[0]

    def _prefix(self) -> str:
        from django.conf import settings

        return str(settings.ATLAS_ES_INDEX_PREFIX)

    def _load(self, seed: Json, count: int) -> None:
        """``count`` copies of ``seed`` with new ids, texts and random unit vectors, bulk-indexed
        into its index with its routing, ``--loaders`` requests at once."""
        if count <= 0:
            return
        index, routing, source = seed["_index"], seed.get("_routing"), seed["_source"]
        dims = len(source["embedding"])
        self.client.indices.put_settings(index=index, settings={"refresh_interval": "-1"})
        try:
            batches = [min(BULK, count - start) for start in range(0, count, BULK)]
            with ThreadPoolExecutor(self.loaders) as pool:
                for failed in pool.map(
                    lambda n: self._bulk(index, routing, source, dims, n), batches
                ):
                    if failed:
                        raise CommandError(f"the cluster refused {failed} documents")
        finally:
            self.client.indices.put_settings(index=index, settings={"refresh_interval": None})
        self.client.indices.refresh(index=index)

    def _bulk(self, index: str, routing: str | None, source: Json, dims: int, n: int) -> int:
        vectors = self.np_rng.standard_normal((n, dims), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        operations: list[Json] = []
        for vector in vectors:
            doc_id = uuid.uuid4().hex
            meta = {"_index": index, "_id": doc_id, "routing": routing}
            operations += [
                {"create": meta},
                {**source, "id": doc_id, "text": synthetic_text(self.rng), "embedding": vector},
            ]
        response = self.client.bulk(operations=operations, refresh=False)
        return sum(1 for item in response["items"] if "error" in item["create"])

    def _settle(self, index: str) -> Json:
        """Wait for merges to finish (their CPU would be counted against recalls)."""
        started = time.perf_counter()
        while True:
            stats = self.client.indices.stats(index=index, metric="merge,segments,store")
            total = stats["_all"]["primaries"]
            if total["merges"]["current"] == 0:
                break
            time.sleep(2)
        return {
            "segments": total["segments"]["count"],
            "store_mb": round(total["store"]["size_in_bytes"] / 2**20),
            "merge_wait_s": round(time.perf_counter() - started, 1),
        }

    # ---------------------------------------------------------------------- recall --

    def _cluster_cpu_ms(self) -> int:
        nodes = self.client.nodes.stats(metric="process")["nodes"].values()
        return sum(int(node["process"]["cpu"]["total_in_millis"]) for node in nodes)

    def _question(self) -> str:
        return f"what did {self.rng.choice(SUBJECTS)} do with {self.rng.choice(OBJECTS)}?"

    def _recalls(self, users: list[Any], count: int) -> Json:
        from memory.public import RecallPlan, memory_recall

        plan = RecallPlan(rerank=False)
        for user in users[:5] + [users[0]] * 5:  # warm: keys, caches, the embedder
            memory_recall(user=user, query=self._question(), k=10, plan=plan)
        wall, own_cpu = [], []
        loadavg = _loadavg()
        cluster_before = self._cluster_cpu_ms()
        for _ in range(count):
            user = self.rng.choice(users)
            query = self._question()
            mark, cpu = time.perf_counter(), time.process_time()
            memory_recall(user=user, query=query, k=10, plan=plan)
            wall.append((time.perf_counter() - mark) * 1000)
            own_cpu.append((time.process_time() - cpu) * 1000)
        cluster_ms = self._cluster_cpu_ms() - cluster_before
        ordered = sorted(wall)
        return {
            "recalls": count,
            "recall_p50_ms": round(statistics.median(ordered), 1),
            "recall_p95_ms": round(ordered[min(count - 1, round(0.95 * (count - 1)))], 1),
            "client_cpu_ms_per_recall": round(statistics.median(own_cpu), 1),
            "cluster_cpu_ms_per_recall": round(cluster_ms / count, 1),
            "loadavg": loadavg,
        }

    def _print(self, label: str, point: Json) -> None:
        self.stdout.write(
            f"{label}: load {point['load_s']} s | recall p50 {point['recall_p50_ms']} ms, "
            f"p95 {point['recall_p95_ms']} ms | cluster CPU {point['cluster_cpu_ms_per_recall']} "
            f"ms/recall | client CPU {point['client_cpu_ms_per_recall']} ms/recall | load "
            f"{' '.join(point['loadavg'])}"
        )

    def _save(self, report: Json, path: str) -> None:
        if path:
            Path(path).write_text(json.dumps(report, indent=2))
