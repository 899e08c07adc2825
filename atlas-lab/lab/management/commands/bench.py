"""``manage.py bench``: write and recall latency and throughput per backend and size.

    python manage.py bench --backend embedded --memories 1000,10000 --json var/bench.json

For each size: loads a synthetic user with that many memories (bulk, embeddings included),
then times ``--writes`` single writes through ``memory_write`` (embedding included),
``--turns`` conversation turns through ``memory_turn_record`` (each in a session that has
turns already: the write reads the session's previous turn for its lexical context, then
recalls; then as many sent as text only, whose session is inferred) and ``--recalls`` recalls
through ``memory_recall`` (with and without the reranker when one is configured), turns and
recalls with their process CPU time too. The bulk-loaded episodes are turns of sessions of
about 20. Prints a table and writes JSON. Figures, not assertions: machines are noisy.
"""

from __future__ import annotations

import json
import random
import secrets
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

SUBJECTS = [
    "Sarah",
    "the router",
    "my daughter",
    "the thermostat",
    "our landlord",
    "the car",
    "Grandma",
    "the team",
]
VERBS = ["prefers", "broke", "needs", "booked", "moved", "fixed", "asked about", "forgot"]
OBJECTS = [
    "oat milk",
    "the blue pot",
    "a dentist visit",
    "the Lumio Hub",
    "postgres upgrade",
    "train tickets",
    "the garden hose",
    "a birthday cake",
    "the VPN",
    "piano lessons",
    "winter tyres",
    "the bank card",
]
PLACES = ["Bristol", "Edinburgh", "the office", "home", "the gym", "Lisbon", "the cabin", "school"]


SESSION_TURNS = 20  # about this many bulk-loaded episodes per session


def synthetic_text(rng: random.Random) -> str:
    return (
        f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} in {rng.choice(PLACES)} "
        f"on day {rng.randint(1, 365)} (ref {rng.getrandbits(24):06x})"
    )


def cpu(run: dict[str, Any], name: str) -> Any:
    """The p50 of figure ``name`` of ``run``, or "-" when it was not measured."""
    return (run.get(name) or {}).get("p50", "-")


def percentiles(samples_ms: list[float]) -> dict[str, float]:
    ordered = sorted(samples_ms)

    def pct(p: float) -> float:
        return round(ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))], 2)

    return {
        "p50": pct(50),
        "p95": pct(95),
        "p99": pct(99),
        "mean": round(statistics.fmean(ordered), 2),
        "n": len(ordered),
    }


def bench_user(slug: str = "bench") -> Any:
    """A throwaway tenant ``<slug>-<hex>`` and its user, onboarded as an operator would
    (``tenant_onboard``: cluster-enforced, with a scoped key, when the cluster offers
    document-level security)."""
    from tenants.services.tenants import tenant_onboard

    suffix = secrets.token_hex(3)
    onboarding = tenant_onboard(
        slug=f"{slug}-{suffix}",
        name=f"{slug} {suffix}",
        admin_username=f"{slug}-{suffix}-admin",
        admin_password=f"{secrets.token_urlsafe(18)}-B3nch",
        user_external_ids=["bench-user"],
    )
    return onboarding.users[0]


def bench_user_remove(user: Any) -> None:
    """What ``bench_user`` made, gone again (its documents already out of the store): the
    tenant suspended first (its cluster keys stop working), then the user, the onboarding's
    tenant admin and the tenant row (the rows under them go with them)."""
    from tenants.services.tenants import tenant_suspend

    tenant = tenant_suspend(tenant=user.tenant)
    user.delete()
    for operator in tenant.operators.select_related("account"):
        operator.account.delete()  # its operator row goes with it
    tenant.delete()


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


class Command(BaseCommand):
    help = "Benchmark memory writes and recalls per backend and size; prints figures and JSON."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--backend", choices=["embedded", "es"], default=None)
        parser.add_argument("--memories", default="1000,10000", help="comma-separated sizes")
        parser.add_argument("--writes", type=int, default=100)
        parser.add_argument("--recalls", type=int, default=200)
        parser.add_argument("--turns", type=int, default=50)
        parser.add_argument("--json", dest="json_path", default="")
        parser.add_argument("--seed", type=int, default=7)

    def handle(self, *args: Any, **options: Any) -> None:
        if options["backend"]:
            settings.ATLAS_MEMORY_BACKEND = (
                "elasticsearch" if options["backend"] == "es" else "embedded"
            )
        if settings.ATLAS_MEMORY_BACKEND == "elasticsearch" and not settings.ATLAS_ES_URL:
            raise CommandError(
                "--backend es needs ATLAS_ES_URL (run `make services` and source .services/env)."
            )
        sizes = [int(s) for s in options["memories"].split(",") if s.strip()]
        rng = random.Random(options["seed"])  # noqa: S311 - synthetic data, not secrets
        report: dict[str, Any] = {
            "backend": settings.ATLAS_MEMORY_BACKEND,
            "reranker": settings.ATLAS_RERANKING.kind,
            "runs": [],
        }
        for size in sizes:
            run = self._run_size(size, rng, options)
            report["runs"].append(run)
            self._print(run)
        report["rss_mb"] = rss_mb()
        self.stdout.write(f"process RSS after all runs: {report['rss_mb']} MB")
        if options["json_path"]:
            Path(options["json_path"]).write_text(json.dumps(report, indent=2))
            self.stdout.write(f"wrote {options['json_path']}")

    def _run_size(self, size: int, rng: random.Random, options: dict[str, Any]) -> dict[str, Any]:
        from memory.public import (
            RecallPlan,
            memory_previous_turn,
            memory_recall,
            memory_turn_record,
            memory_write,
        )

        user = bench_user()
        started = time.perf_counter()
        self._bulk_load(user, size - options["writes"], rng)
        load_s = time.perf_counter() - started
        writes = []
        for _ in range(options["writes"]):
            mark = time.perf_counter()
            memory_write(
                user=user,
                text=synthetic_text(rng),
                memory_type=rng.choice(["semantic", "procedural"]),
            )
            writes.append((time.perf_counter() - mark) * 1000)
        turns, turn_cpu = [], []
        sessions = max(1, size // SESSION_TURNS)
        for _ in range(options["turns"]):
            mark, cpu = time.perf_counter(), time.process_time()
            memory_turn_record(
                user=user, text=synthetic_text(rng), session_id=f"s{rng.randrange(sessions)}"
            )
            turns.append((time.perf_counter() - mark) * 1000)
            turn_cpu.append((time.process_time() - cpu) * 1000)
        # Turns sent as text only (no session_id): the session is inferred (memory.services.
        # sessions), the previous turn read for the lexical context, then the recall.
        text_turns, text_turn_cpu = [], []
        for _ in range(options["turns"]):
            mark, cpu = time.perf_counter(), time.process_time()
            memory_turn_record(user=user, text=synthetic_text(rng))
            text_turns.append((time.perf_counter() - mark) * 1000)
            text_turn_cpu.append((time.process_time() - cpu) * 1000)
        # The read a turn write adds for its lexical context, alone (memory.services.turn_context).
        lookups = []
        for _ in range(options["turns"] * 4):
            mark = time.perf_counter()
            memory_previous_turn(
                user=user, session_id=f"s{rng.randrange(sessions)}", before=datetime.now(UTC)
            )
            lookups.append((time.perf_counter() - mark) * 1000)
        queries = [
            f"what did {rng.choice(SUBJECTS)} do with {rng.choice(OBJECTS)}?"
            for _ in range(options["recalls"])
        ]
        plain, with_rerank, recall_cpu = [], [], []
        mark_all = time.perf_counter()
        for query in queries:
            mark, cpu = time.perf_counter(), time.process_time()
            memory_recall(user=user, query=query, k=10, plan=RecallPlan(rerank=False))
            plain.append((time.perf_counter() - mark) * 1000)
            recall_cpu.append((time.process_time() - cpu) * 1000)
        per_second = len(queries) / (time.perf_counter() - mark_all)
        if settings.ATLAS_RERANKING.kind != "none":
            for query in queries:
                mark = time.perf_counter()
                memory_recall(user=user, query=query, k=10)
                with_rerank.append((time.perf_counter() - mark) * 1000)
        return {
            "memories": size,
            "bulk_load_s": round(load_s, 1),
            "write_ms": percentiles(writes),
            "turn_ms": percentiles(turns) if turns else None,
            "turn_cpu_ms": percentiles(turn_cpu) if turn_cpu else None,
            "text_only_turn_ms": percentiles(text_turns) if text_turns else None,
            "text_only_turn_cpu_ms": percentiles(text_turn_cpu) if text_turn_cpu else None,
            "previous_turn_read_ms": percentiles(lookups) if lookups else None,
            "recall_ms_no_rerank": percentiles(plain),
            "recall_cpu_ms_no_rerank": percentiles(recall_cpu),
            "recall_ms_rerank": percentiles(with_rerank) if with_rerank else None,
            "recalls_per_second": round(per_second, 1),
            "rss_mb": rss_mb(),
        }

    def _bulk_load(self, user: Any, count: int, rng: random.Random) -> None:
        from datetime import timedelta

        from memory.public import ImportedMemory, memory_import

        now = datetime.now(UTC)
        types = ["episodic", "episodic", "semantic", "procedural"]
        sessions = max(1, (count + 50) // SESSION_TURNS)
        for start in range(0, max(0, count), 500):
            batch_texts = [synthetic_text(rng) for _ in range(min(500, count - start))]
            memories = []
            for text in batch_texts:
                when = now - timedelta(days=rng.randint(0, 900))
                kind = rng.choice(types)
                session = f"s{rng.randrange(sessions)}" if kind == "episodic" else None
                memories.append(
                    ImportedMemory(memory_type=kind, text=text, timestamp=when, session_id=session)
                )
            memory_import(user=user, memories=memories)

    def _print(self, run: dict[str, Any]) -> None:
        w, r = run["write_ms"], run["recall_ms_no_rerank"]
        t = run["turn_ms"] or {"p50": "-", "p95": "-"}
        line = (
            f"{run['memories']:>7} memories | write p50 {w['p50']} p95 {w['p95']} ms | "
            f"turn p50 {t['p50']} p95 {t['p95']} ms (CPU p50 {cpu(run, 'turn_cpu_ms')}) | "
            f"text-only turn p50 {cpu(run, 'text_only_turn_ms')} ms "
            f"(CPU p50 {cpu(run, 'text_only_turn_cpu_ms')}) | "
            f"previous-turn read p50 {(run['previous_turn_read_ms'] or {}).get('p50', '-')} ms | "
            f"recall p50 {r['p50']} p95 {r['p95']} p99 {r['p99']} ms "
            f"(CPU p50 {cpu(run, 'recall_cpu_ms_no_rerank')}) | "
            f"{run['recalls_per_second']} recalls/s"
        )
        if run["recall_ms_rerank"]:
            rr = run["recall_ms_rerank"]
            line += f" | with rerank p50 {rr['p50']} p95 {rr['p95']} ms"
        self.stdout.write(line + f" | RSS {run['rss_mb']} MB")
