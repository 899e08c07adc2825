"""``manage.py bench_knowledge``: the knowledge graph at size, per backend.

    python manage.py bench_knowledge --backend embedded --entities 2000 --json var/kg.json

Indexes ``--entities`` synthetic notes through ``entity_upsert`` (what the CLI's upserts do:
parse, embed, revision, edges, searchable document), each with three edges to other notes
(``blocked_by``, ``depends_on``, a ``[[wikilink]]``: 6,000 edges for 2,000 notes), then times
``--queries`` searches, related walks at depth 1 and 2, and handoff builds. Prints figures and
writes JSON. Figures, not assertions. The bench tenant is left in place for inspection unless
``--clean``.
"""

from __future__ import annotations

import json
import random
import secrets
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from lab.management.commands.bench import bench_user, bench_user_remove, percentiles

TOPICS = [
    "billing database migration",
    "search relevance tuning",
    "mobile push notifications",
    "payment provider outage",
    "customer export to CSV",
    "feature flag cleanup",
    "kubernetes node upgrade",
    "login rate limiting",
    "invoice PDF rendering",
    "nightly backup verification",
    "onboarding email sequence",
    "latency regression in recall",
]
STATUSES = ["open", "in_progress", "blocked", "waiting", "done"]
TYPES = ["plan", "decision", "task", "initiative", "note"]


def note(n: int, total: int, rng: random.Random) -> tuple[str, str]:
    topic = TOPICS[n % len(TOPICS)]
    others = rng.sample(range(total), 3)
    blocked, depends, link = (f"e{o}" for o in others)
    body = (
        f"# {topic.title()} {n}\n\n"
        f"Work item {n} about {topic}: {rng.choice(['measure', 'fix', 'decide', 'ship'])} "
        f"before {rng.choice(['the release', 'Friday', 'the audit', 'the next sprint'])}. "
        f"See [[e{link[1:]}]] for context.\n"
    )
    content = (
        f"---\nid: e{n}\ntype: {TYPES[n % len(TYPES)]}\nstatus: {rng.choice(STATUSES)}\n"
        f"blocked_by: {blocked}\ndepends_on: [{depends}]\n---\n{body}"
    )
    return f"notes/{TYPES[n % len(TYPES)]}/e{n}.md", content


class Command(BaseCommand):
    help = "Benchmark the knowledge graph: index, search, related, handoff; prints JSON."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--backend", choices=["embedded", "es"], default=None)
        parser.add_argument("--entities", type=int, default=2000)
        parser.add_argument("--queries", type=int, default=100)
        parser.add_argument("--json", dest="json_path", default="")
        parser.add_argument("--seed", type=int, default=7)
        parser.add_argument("--clean", action="store_true")
        parser.add_argument(
            "--reuse",
            default="",
            help="Time the queries again on an earlier run's tenant (its slug), skip indexing.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        from agents.services.projects import project_register
        from knowledge.models import Edge
        from knowledge.selectors import graph_related, graph_search
        from knowledge.services.entities import entity_upsert
        from knowledge.services.handoff import handoff_build

        if options["backend"]:
            settings.ATLAS_MEMORY_BACKEND = (
                "elasticsearch" if options["backend"] == "es" else "embedded"
            )
        if settings.ATLAS_MEMORY_BACKEND == "elasticsearch" and not settings.ATLAS_ES_URL:
            raise CommandError("--backend es needs ATLAS_ES_URL.")
        rng = random.Random(options["seed"])  # noqa: S311 - synthetic data, not secrets
        total = options["entities"]
        upserts: list[float] = []
        index_s = 0.0
        if options["reuse"]:
            from agents.models import Project

            project = Project.objects.select_related("user__tenant").get(
                user__tenant__slug=options["reuse"]
            )
            user = project.user
            total = project.entities.count()
        else:
            user = bench_user("bench-kg")
            project = project_register(user=user, path=f"/bench/{secrets.token_hex(3)}").project
            started = time.perf_counter()
            for n in range(total):
                path, content = note(n, total, rng)
                mark = time.perf_counter()
                entity_upsert(user=user, project_key=project.key, path=path, content=content)
                upserts.append((time.perf_counter() - mark) * 1000)
            index_s = time.perf_counter() - started
        edges = Edge.objects.filter(project=project, removed_at=None).count()
        queries = options["queries"]
        search = self._time(
            queries,
            lambda i: graph_search(
                user=user, query=f"{TOPICS[i % len(TOPICS)]} blocked", project_key=project.key
            ),
        )
        keys = [f"e{rng.randrange(total)}" for _ in range(queries)]
        related1 = self._time(
            queries,
            lambda i: graph_related(user=user, project_key=project.key, key=keys[i], depth=1),
        )
        related2 = self._time(
            queries,
            lambda i: graph_related(user=user, project_key=project.key, key=keys[i], depth=2),
        )
        handoff = self._time(
            10, lambda i: handoff_build(user=user, project_key=project.key, token_budget=2000)
        )
        result = {
            "backend": settings.ATLAS_MEMORY_BACKEND,
            "tenant": user.tenant.slug,
            "entities": total,
            "edges": edges,
            "index_s": round(index_s, 1),
            "upsert_ms": percentiles(upserts) if upserts else None,
            "search_ms": search,
            "related_depth1_ms": related1,
            "related_depth2_ms": related2,
            "handoff_ms": handoff,
        }
        self.stdout.write(json.dumps(result, indent=2))
        if options["json_path"]:
            Path(options["json_path"]).write_text(json.dumps(result, indent=2) + "\n")
        if options["clean"]:
            self._clean(user)

    @staticmethod
    def _time(n: int, fn: Any) -> dict[str, float]:
        samples = []
        for i in range(n):
            mark = time.perf_counter()
            fn(i)
            samples.append((time.perf_counter() - mark) * 1000)
        return percentiles(samples)

    def _clean(self, user: Any) -> None:
        from knowledge.models import Entity
        from memory.public import searchable_delete

        ids = list(Entity.objects.filter(user=user).values_list("doc_id", flat=True))
        for start in range(0, len(ids), 500):
            searchable_delete(user=user, doc_ids=ids[start : start + 500])
        bench_user_remove(user)
