"""``manage.py bench_spread``: what recall's session spread (or another plan) costs, interleaved.

    python manage.py bench_spread --backend embedded --memories 10000 --queries 300
    python manage.py bench_spread --backend embedded --against default \
        --plan '{"feedback_docs": 3, "feedback_terms": 10}'

Loads one synthetic user with ``--memories`` memories (``bench``'s: turns in sessions of about
20), then asks each query twice, with the default plan ("on") and with the spread off
(``RecallPlan(session_spread=0)``; ``--against before``: also the clock anchor and 80
candidates per leg, the defaults before the spread), in alternating order, with the query
vector computed once for both. Prints recall p50 / p95 / mean for each and the spread's own
time (``timings_ms["spread_ms"]``). ``--against default --plan JSON``: the default plan
("off") against a plan of those ``RecallPlan`` fields ("on"). Each recall's CPU time (the
process's, ``time.process_time``) is reported beside its wall time: on a shared machine the
wall time is mostly waiting. Figures, not assertions.
"""

from __future__ import annotations

import json
import random
import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from lab.management.commands.bench import Command as Bench
from lab.management.commands.bench import bench_user, percentiles, synthetic_text
from lab.management.commands.eval_recall import private_run

WARM_UP = 20


class Command(BaseCommand):
    help = "Recall latency with the session spread on and off, query by query (figures)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--backend", choices=["embedded", "elasticsearch", "es"])
        parser.add_argument("--memories", type=int, default=10_000)
        parser.add_argument("--queries", type=int, default=300)
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument(
            "--against",
            choices=["no-spread", "before", "default"],
            default="no-spread",
            help="off = the default plan without the spread, or the defaults before it "
            "(no spread, time words read off the clock, 80 candidates per leg), or the "
            "default plan (then on = --plan)",
        )
        parser.add_argument(
            "--plan", default="{}", help="with --against default: RecallPlan fields, as JSON"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        with private_run(self, options["backend"]):
            report = self._run(options)
        self.stdout.write(json.dumps(report, indent=1))

    def _run(self, options: dict[str, Any]) -> dict[str, Any]:
        from memory.public import RecallPlan, embedder, memory_recall

        rng = random.Random(options["seed"])  # noqa: S311 - synthetic data, not secrets
        user = bench_user("spread")
        Bench()._bulk_load(user, options["memories"], rng)
        off = (
            RecallPlan(session_spread=0.0)
            if options["against"] == "no-spread"
            else RecallPlan(session_spread=0.0, time_anchor="clock", candidates=80)
        )
        plans = {"on": RecallPlan(), "off": off}
        if options["against"] == "default":
            plans = {"on": RecallPlan(**json.loads(options["plan"])), "off": RecallPlan()}
        samples: dict[str, list[float]] = {"on": [], "off": []}
        cpu: dict[str, list[float]] = {"on": [], "off": []}
        spread_ms: list[float] = []
        queries = [synthetic_text(rng) for _ in range(options["queries"])]
        for query in queries[:WARM_UP]:
            memory_recall(user=user, query=query, k=10, track_usage=False)
        for n, query in enumerate(queries):
            vector = embedder().embed_query(query)
            for name in ("on", "off") if n % 2 == 0 else ("off", "on"):
                mark = time.process_time()
                result = memory_recall(
                    user=user, query=query, k=10, track_usage=False, plan=plans[name], vector=vector
                )
                cpu[name].append((time.process_time() - mark) * 1000.0)
                samples[name].append(result.took_ms)
                if name == "on":
                    spread_ms.append(result.timings_ms.get("spread_ms", 0.0))
        return {
            "backend": settings.ATLAS_MEMORY_BACKEND,
            "memories": options["memories"],
            "queries": options["queries"],
            "against": options["against"],
            "plan": options["plan"] if options["against"] == "default" else None,
            **{name: percentiles(values) for name, values in samples.items()},
            **{f"{name}_cpu_ms": percentiles(values) for name, values in cpu.items()},
            "spread_ms": percentiles(spread_ms),
        }
