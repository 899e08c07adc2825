"""``manage.py bench_archive``: recall of a user with many superseded facts against a user with
none, before and after the archive moved the superseded facts out of the hot index.

    python manage.py bench_archive --backend embedded --memories 3000 --superseded 3000

Two users, each in a tenant of its own (its own index on Elasticsearch), load the same
``--memories`` memories (``bench``'s synthetic mix, same seed). The "many" user also gets
``--superseded`` facts of the same vocabulary, superseded ten at a time by ``--superseded`` /
10 newer facts; the "none" user gets those newer facts as plain current facts, so both hot
indices hold the same number of documents once the archive has run. Then each query is asked
of both users in alternating order (the query vector computed once), before and after
``memory_archive_superseded``. Prints recall p50 / p95 / mean per user and phase, the
many/none p50 ratio, this process's CPU time per recall, and the load average at the start
and the end (the machine is shared). Figures, not assertions.
"""

from __future__ import annotations

import json
import os
import random
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from lab.management.commands.bench import Command as Bench
from lab.management.commands.bench import (
    bench_user,
    bench_user_remove,
    percentiles,
    synthetic_text,
)
from lab.management.commands.eval_recall import private_run

WARM_UP = 20
CHAIN = 10  # superseded facts per newer fact


def load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


class Command(BaseCommand):
    help = "Recall p50 of a user with many superseded facts vs none, before/after archiving."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--backend", choices=["embedded", "elasticsearch", "es"])
        parser.add_argument("--memories", type=int, default=3000)
        parser.add_argument("--superseded", type=int, default=3000)
        parser.add_argument("--queries", type=int, default=200)
        parser.add_argument("--seed", type=int, default=11)

    def handle(self, *args: Any, **options: Any) -> None:
        with private_run(self, options["backend"]):
            report = self._run(options)
        self.stdout.write(json.dumps(report, indent=1))

    def _run(self, options: dict[str, Any]) -> dict[str, Any]:
        from memory.public import memory_archive_superseded, memory_archived_count

        started_load = load_average()
        users = {"none": bench_user("arch-none"), "many": bench_user("arch-many")}
        loaded = time.perf_counter()
        for user in users.values():  # the same memories for both (the same seed)
            same = random.Random(options["seed"])  # noqa: S311 - synthetic data
            Bench()._bulk_load(user, options["memories"], same)
        more = random.Random(options["seed"] + 1)  # noqa: S311 - synthetic data
        self._supersede(users, options["superseded"], more)
        load_s = time.perf_counter() - loaded
        asked = random.Random(options["seed"] + 2)  # noqa: S311 - synthetic data
        queries = [synthetic_text(asked) for _ in range(options["queries"])]
        report: dict[str, Any] = {
            "backend": settings.ATLAS_MEMORY_BACKEND,
            "memories": options["memories"],
            "superseded": options["superseded"],
            "queries": options["queries"],
            "load_s": round(load_s, 1),
            "loadavg_start": started_load,
        }
        report["before"] = self._phase(users, queries)
        many = users["many"]
        ids = {"tenant_id": many.tenant.memory_id, "user_id": many.memory_id}
        moved_at = time.perf_counter()
        moved = memory_archive_superseded(**ids, before=datetime.now(UTC) + timedelta(seconds=1))
        report["archived"] = moved
        report["archive_s"] = round(time.perf_counter() - moved_at, 2)
        report["archived_count"] = memory_archived_count(**ids)
        report["after"] = self._phase(users, queries)
        report["loadavg_end"] = load_average()
        for user in users.values():  # their keys withdrawn, their rows gone
            bench_user_remove(user)
        return report

    def _supersede(self, users: dict[str, Any], count: int, rng: random.Random) -> None:
        """``count`` facts for "many", superseded ``CHAIN`` at a time by newer ones; the newer
        facts for "none" too (as plain facts)."""
        from memory.public import (
            ImportedMemory,
            memory_import,
            memory_write,
            memory_writes_together,
        )

        now = datetime.now(UTC)
        texts = [synthetic_text(rng) for _ in range(count)]
        old: list[str] = []
        for start in range(0, count, 500):
            batch = [
                ImportedMemory(memory_type="semantic", text=text, timestamp=now)
                for text in texts[start : start + 500]
            ]
            old += [doc.id for doc in memory_import(user=users["many"], memories=batch)]
        newer = [synthetic_text(rng) for _ in range(0, len(old), CHAIN)]
        # One embedding call and one refresh for the lot, not one per write.
        with memory_writes_together(newer):
            for start, text in zip(range(0, len(old), CHAIN), newer, strict=True):
                memory_write(
                    user=users["many"],
                    text=text,
                    memory_type="semantic",
                    supersedes=old[start : start + CHAIN],
                )
                memory_write(user=users["none"], text=text, memory_type="semantic")

    def _phase(self, users: dict[str, Any], queries: list[str]) -> dict[str, Any]:
        from memory.public import embedder, memory_recall

        for query in queries[:WARM_UP]:
            for user in users.values():
                memory_recall(user=user, query=query, k=10, track_usage=False)
        samples: dict[str, list[float]] = {"none": [], "many": []}
        cpu: dict[str, list[float]] = {"none": [], "many": []}
        for n, query in enumerate(queries):
            vector = embedder().embed_query(query)
            for name in ("none", "many") if n % 2 == 0 else ("many", "none"):
                before = time.process_time()
                result = memory_recall(
                    user=users[name], query=query, k=10, track_usage=False, vector=vector
                )
                cpu[name].append((time.process_time() - before) * 1000.0)
                samples[name].append(result.took_ms)
        figures = {name: percentiles(values) for name, values in samples.items()}
        return {
            **figures,
            "cpu_ms_p50": {name: percentiles(values)["p50"] for name, values in cpu.items()},
            "p50_ratio_many_over_none": round(figures["many"]["p50"] / figures["none"]["p50"], 3),
            "loadavg": load_average(),
        }
