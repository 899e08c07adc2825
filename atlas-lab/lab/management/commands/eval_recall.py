"""``manage.py eval_recall``: QA-style recall quality over the committed persona corpora.

    python manage.py eval_recall --backend elasticsearch --json var/eval.json --plot var/eval.png
    python manage.py eval_recall --overlap          # question/target overlap only, no store

Loads the personas (``lab/evaluation/corpus/*.json``) into a fresh tenant (plus a foreign
tenant for leakage probes) on a private index prefix / SQLite file, asks every question as its
persona at the corpus's fixed ``now`` (k=10) under each ablation, probes for leaks, then removes
what it wrote unless ``--keep``. Exit codes: 2 leaks, 3 R@10 under the gate, 4 R@5 under the
gate, 0 otherwise. ``--gate-r10`` / ``--gate-r5`` read the personas corpus (the one they were
set on) when the run has it, else the run's overall figures; ``--corpus-gates`` gate any
corpus by name. See docs/recall-quality.md.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from lab.evaluation.corpus import CORPORA, CORPUS_DIR, PATHS, CorpusError, read_corpus
from lab.evaluation.overlap import overlap_report
from lab.evaluation.report import overlap_tables, path_table, plot, tables
from lab.evaluation.runner import ABLATIONS
from memory.public import DEFAULT_PLAN, resolve_plan

EXIT_LEAKS, EXIT_R10, EXIT_R5 = 2, 3, 4
SWITCHED_SETTINGS = ("ATLAS_MEMORY_BACKEND", "ATLAS_ES_INDEX_PREFIX", "ATLAS_EMBEDDED_PATH")


@contextlib.contextmanager
def private_run(command: BaseCommand, backend: str | None) -> Iterator[Command]:
    """For another lab command: ``with private_run(self, backend) as runner:`` runs its body
    on ``backend`` in a store of its own, removed afterwards (``runner.suffix`` names it)."""
    runner = Command()
    runner.stdout, runner.stderr = command.stdout, command.stderr
    with runner.on_private_store(backend):
        yield runner


class Command(BaseCommand):
    suffix = ""
    help = "Recall quality eval (R@1/5/10, MRR, ablations, leakage) over the persona corpora."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--backend", choices=["embedded", "elasticsearch", "es"])
        parser.add_argument("--personas", default="", help="comma-separated (default: all)")
        parser.add_argument("--corpus", default=str(CORPUS_DIR), help="corpus directory")
        parser.add_argument(
            "--corpora",
            default="personas",
            help=f"comma-separated subset of {', '.join(CORPORA)}, or 'all' (default: personas)",
        )
        parser.add_argument(
            "--split", choices=["dev", "test", "all"], default="all", help="questions to ask"
        )
        parser.add_argument(
            "--corpus-gates",
            default="",
            help="per-corpus R@10 gates, e.g. conversations=0.6,agent_work=0.8",
        )
        parser.add_argument("--limit-questions", type=int, default=None, help="per persona")
        parser.add_argument(
            "--ablations",
            default="",
            help=f"comma-separated subset of {', '.join(a.name for a in ABLATIONS)} (default: all)",
        )
        parser.add_argument(
            "--clock-offset-days",
            type=int,
            default=0,
            help="ask each question this many days after the corpus's now (a server clock "
            "that has moved on since the history was recorded)",
        )
        parser.add_argument(
            "--paths",
            default="sessions",
            help=f"comma-separated subset of {', '.join(PATHS)}: how the turns are sent (with "
            "session ids and dates / dates only / text only); each path is loaded and asked "
            "on its own, shown side by side (the gates read the first)",
        )
        parser.add_argument("--json", dest="json_path", default="")
        parser.add_argument("--plot", dest="plot_path", default="")
        parser.add_argument("--gate-r10", type=float, default=0.85)
        parser.add_argument("--gate-r5", type=float, default=0.75)
        parser.add_argument("--overlap", action="store_true", help="overlap report only")
        parser.add_argument("--keep", action="store_true", help="keep the tenants' data")
        parser.add_argument(
            "--statistics",
            choices=["tenant", "user"],
            default="tenant",
            help="the tenant's statistics scope (user: each user's own index; README isolation)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        names = [n.strip() for n in options["personas"].split(",") if n.strip()] or None
        corpora = [c.strip() for c in options["corpora"].split(",") if c.strip()]
        if corpora == ["all"]:
            corpora = list(CORPORA)
        options["corpus_gate_map"] = _corpus_gates(options["corpus_gates"])
        try:
            personas, catalog = read_corpus(Path(options["corpus"]), names, corpora)
        except CorpusError as exc:
            raise CommandError(str(exc)) from exc
        if not personas:
            raise CommandError(f"No persona files in {options['corpus']}.")
        overlap = overlap_report(personas)
        if options["overlap"]:
            self._write(overlap_tables(overlap))
            if options["json_path"]:
                Path(options["json_path"]).write_text(json.dumps({"overlap": overlap}, indent=2))
            return
        wanted = [a.strip() for a in options["ablations"].split(",") if a.strip()]
        unknown = sorted(set(wanted) - {a.name for a in ABLATIONS})
        if unknown:
            raise CommandError(f"Unknown ablations: {', '.join(unknown)}.")
        if wanted and "full" not in wanted:
            wanted.insert(0, "full")  # the gates read the full pipeline
        options["ablation_list"] = [a for a in ABLATIONS if not wanted or a.name in wanted]
        paths = list(dict.fromkeys(p.strip() for p in options["paths"].split(",") if p.strip()))
        if not paths or set(paths) - set(PATHS):
            raise CommandError(f"--paths takes {', '.join(PATHS)} (comma-separated).")
        with self.on_private_store(options["backend"], keep=options["keep"]) as store_note:
            reports = {p: self._evaluate(personas, catalog, options, p) for p in paths}
            for each in reports.values():
                each["config"]["store"] = store_note
        report = reports[paths[0]]
        report["overlap"] = overlap
        for path, each in reports.items():
            if len(reports) > 1:
                self._write([f"== path {path} =="])
            self._write(tables(each))
        if len(reports) > 1:
            report["paths"] = {p: _path_figures(r) for p, r in reports.items()}
            # Every ablation of every path, and each path's questions (the first path's are
            # ``questions``): a method is chosen per path, question by question.
            report["path_ablations"] = {p: r["ablations"] for p, r in reports.items()}
            report["path_questions"] = {p: r["questions"] for p, r in reports.items()}
            self._write(path_table(report["paths"]))
        self._write(overlap_tables(overlap)[:1])
        if options["json_path"]:
            Path(options["json_path"]).parent.mkdir(parents=True, exist_ok=True)
            Path(options["json_path"]).write_text(json.dumps(report, indent=2, default=str))
            self._write([f"wrote {options['json_path']}"])
        if options["plot_path"]:
            try:
                plot(report, options["plot_path"])
            except RuntimeError as exc:
                raise CommandError(str(exc)) from exc
            self._write([f"wrote {options['plot_path']}"])
        code = self._gate(report, options["gate_r10"], options["gate_r5"])
        code = code or self._corpus_gate(report, options["corpus_gate_map"])
        if code:
            sys.exit(code)

    def _evaluate(
        self, personas: list[Any], catalog: list[Any], options: dict[str, Any], path: str
    ) -> dict[str, Any]:
        from lab.evaluation.corpus import load_run
        from lab.evaluation.runner import evaluate

        started = time.perf_counter()
        foreign = personas[1 % len(personas)]
        run = load_run(
            personas,
            catalog,
            foreign=foreign,
            suffix=f"{self.suffix}-{path}",
            statistics_scope=options["statistics"],
            path=path,
        )
        if settings.ATLAS_MEMORY_BACKEND == "elasticsearch":
            _one_segment(settings.ATLAS_ES_INDEX_PREFIX)
        load_s = round(time.perf_counter() - started, 1)
        self._write(
            [f"loaded {len(personas)} persona(s) + foreign tenant in {load_s} s (path {path})"]
        )
        mark = time.perf_counter()
        report = evaluate(
            run,
            personas,
            limit_questions=options["limit_questions"],
            ablations=options["ablation_list"],
            reranker_configured=settings.ATLAS_RERANKING.kind != "none",
            split=None if options["split"] == "all" else options["split"],
            clock_offset_days=options["clock_offset_days"],
        )
        default = resolve_plan(DEFAULT_PLAN, settings.ATLAS_RECALL)  # the product's recall
        report["config"] = {
            "backend": settings.ATLAS_MEMORY_BACKEND,
            "embedder": _embedder_name(),
            "reranker": settings.ATLAS_RERANKING.kind,
            "lexical_weight": default.lexical_weight,
            "statistics_scope": options["statistics"],
            "isolation": (
                run.tenant.isolation_mode
                if settings.ATLAS_MEMORY_BACKEND == "elasticsearch"
                else "filter"  # the embedded backend filters in-process
            ),
            "split": options["split"],
            "path": path,
            "session_gap_s": settings.ATLAS_SESSION_GAP_S,
            "clock_offset_days": options["clock_offset_days"],
            "time_anchor": default.time_anchor,
            "turn_context": settings.ATLAS_TURN_CONTEXT,
            "turn_lexical_context": settings.ATLAS_TURN_LEXICAL_CONTEXT,
            "turn_context_boost": default.context_boost,
            "default_plan": dataclasses.asdict(default),
            "personas": {
                p.persona: {
                    "corpus": p.corpus,
                    "memories": len(p.memories),
                    "questions": len(p.questions),
                    "now": p.now.isoformat(),
                }
                for p in personas
            },
            "foreign_persona": foreign.persona,
            "catalog_documents": len(catalog),
            "questions": len(report["questions"]),
            "limit_questions": options["limit_questions"],
            "load_s": load_s,
            "load_timings_s": run.timings_s,
            "eval_s": round(time.perf_counter() - mark, 1),
        }
        return report

    @contextlib.contextmanager
    def on_private_store(self, backend: str | None, *, keep: bool = False) -> Iterator[str]:
        """``backend`` (or the configured one) in a store of this run's own
        (``_private_store``); the process (a test, a shell) gets its own configuration back
        afterwards. Yields the store's description."""
        saved = {name: getattr(settings, name) for name in SWITCHED_SETTINGS}
        try:
            self._use_backend(backend)
            with self._private_store(keep=keep) as note:
                yield note
        finally:
            for name, value in saved.items():
                setattr(settings, name, value)

    def _use_backend(self, choice: str | None) -> None:
        if choice:
            settings.ATLAS_MEMORY_BACKEND = "embedded" if choice == "embedded" else "elasticsearch"
        if settings.ATLAS_MEMORY_BACKEND == "elasticsearch" and not settings.ATLAS_ES_URL:
            raise CommandError(
                "The elasticsearch backend needs ATLAS_ES_URL (source .services/env)."
            )

    @contextlib.contextmanager
    def _private_store(self, *, keep: bool) -> Any:
        """A private index prefix (Elasticsearch) or SQLite file (embedded) for this run, so
        it never mixes with served data; removed afterwards unless ``keep``."""
        suffix = self.suffix = secrets.token_hex(4)
        if settings.ATLAS_MEMORY_BACKEND == "elasticsearch":
            prefix = f"{settings.ATLAS_ES_INDEX_PREFIX}-eval-{suffix}"
            settings.ATLAS_ES_INDEX_PREFIX = prefix
            note = f"index prefix {prefix}"
            try:
                yield note
            finally:
                if not keep:
                    _drop_indices(prefix)
                    _invalidate_keys(f"eval-{suffix}")
        else:
            directory = Path(tempfile.mkdtemp(prefix="atlas-eval-"))
            settings.ATLAS_EMBEDDED_PATH = str(directory / "memory.sqlite3")
            note = f"sqlite {settings.ATLAS_EMBEDDED_PATH}"
            try:
                yield note
            finally:
                if not keep:
                    shutil.rmtree(directory, ignore_errors=True)
                    _invalidate_keys(f"eval-{suffix}")
        if keep:
            self._write([f"kept the run's data: {note}"])

    def _gate(self, report: dict[str, Any], gate_r10: float, gate_r5: float) -> int:
        """Leaks, then the R@10 / R@5 gates on the figures ``gated_figures`` picks."""
        if report["leakage"]["leaks"]:
            self.stderr.write(f"FAIL: {report['leakage']['leaks']} leaks")
            return EXIT_LEAKS
        label, figures = gated_figures(report["ablations"]["full"])
        if figures["r@10"] < gate_r10:
            self.stderr.write(f"FAIL: {label} R@10 {figures['r@10']} under the gate {gate_r10}")
            return EXIT_R10
        if figures["r@5"] < gate_r5:
            self.stderr.write(f"FAIL: {label} R@5 {figures['r@5']} under the gate {gate_r5}")
            return EXIT_R5
        self._write([f"gates passed ({label}: R@10 >= {gate_r10}, R@5 >= {gate_r5}, no leaks)"])
        return 0

    def _corpus_gate(self, report: dict[str, Any], gates: dict[str, float]) -> int:
        per_corpus = report["ablations"]["full"].get("per_corpus", {})
        for corpus, gate in gates.items():
            measured = per_corpus.get(corpus, {}).get("r@10")
            if measured is None or measured < gate:
                self.stderr.write(f"FAIL: {corpus} R@10 {measured} under the gate {gate}")
                return EXIT_R10
        if gates:
            self._write([f"corpus gates passed: {gates}"])
        return 0

    def _write(self, lines: list[str]) -> None:
        for line in lines:
            self.stdout.write(line)


def gated_figures(full: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """What ``--gate-r10`` / ``--gate-r5`` read: the personas corpus's figures when the run
    has more corpora than it (its gates were set on it; the other corpora have their own,
    ``--corpus-gates``), else the run's overall figures."""
    per_corpus = full.get("per_corpus", {})
    if "personas" in per_corpus and len(per_corpus) > 1:
        return "personas", per_corpus["personas"]
    return "overall", full["overall"]


def _corpus_gates(text: str) -> dict[str, float]:
    gates: dict[str, float] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        name, _, value = part.partition("=")
        try:
            gates[name.strip()] = float(value)
        except ValueError as exc:
            raise CommandError(f"Bad corpus gate {part!r} (use name=0.8).") from exc
        if name.strip() not in CORPORA:
            raise CommandError(f"Unknown corpus in --corpus-gates: {name.strip()!r}.")
    return gates


def _embedder_name() -> str:
    from memory.public import embedder

    model = embedder()
    return str(getattr(model, "name", type(model).__name__))


def _one_segment(prefix: str) -> None:
    """Merge the run's indices to one segment each before any question: what a search scores
    then no longer depends on when the node refreshed and merged during the load (BM25 counts
    the deleted copies a supersession leaves until a merge drops them; the dense leg searches
    one graph per segment), so two runs answer alike."""
    from atlas_platform.cluster import Cluster, ClusterConfig

    config = ClusterConfig.from_settings()
    if config is None:
        return
    client = Cluster(config).client
    client.indices.refresh(index=f"{prefix}-*", allow_no_indices=True)
    client.indices.forcemerge(index=f"{prefix}-*", max_num_segments=1, allow_no_indices=True)


def _drop_indices(prefix: str) -> None:
    from atlas_platform.cluster import Cluster, ClusterConfig

    config = ClusterConfig.from_settings()
    if config is None:
        return
    client = Cluster(config).client
    with contextlib.suppress(Exception):  # best effort: a throwaway prefix
        client.indices.delete(index=f"{prefix}-*", allow_no_indices=True)
    with contextlib.suppress(Exception):
        client.indices.delete_index_template(name=f"{prefix}-*")
    with contextlib.suppress(Exception):
        client.cluster.delete_component_template(name=f"{prefix}-*")


def _path_figures(report: dict[str, Any]) -> dict[str, Any]:
    """The full pipeline's figures of one path's run, per corpus and per corpus and kind."""
    full = report["ablations"]["full"]
    return {
        "overall": full["overall"],
        "per_corpus": full["per_corpus"],
        "per_corpus_kind": full["per_corpus_kind"],
        "leaks": report["leakage"]["leaks"],
    }


def _invalidate_keys(slug_prefix: str) -> None:
    """The run's scoped keys stop working with its data gone (tenant rows stay: the audit
    log is append-only and points at them)."""
    from tenants.models import ScopedKey
    from tenants.services.scoped_keys import scoped_key_invalidate

    live = ScopedKey.objects.filter(user__tenant__slug__startswith=slug_prefix).exclude(
        status=ScopedKey.Status.INVALIDATED
    )
    for key in live.select_related("user__tenant"):
        with contextlib.suppress(Exception):
            scoped_key_invalidate(key=key)
