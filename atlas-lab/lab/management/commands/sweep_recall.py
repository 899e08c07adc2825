"""``manage.py sweep_recall``: choose the recall defaults across corpora by the written rule.

    python manage.py sweep_recall --backend embedded --json var/sweep.json

Loads the chosen corpora (all by default) into a private store as ``eval_recall`` does, then
sweeps every knob on the DEV split only (``lab.evaluation.sweep``: worst corpus's R@10, ties by
the mean), and prints each knob's table and the chosen setting. Test questions are never asked.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from lab.evaluation.corpus import CORPORA, CORPUS_DIR, CorpusError, read_corpus
from lab.management.commands.eval_recall import private_run


class Command(BaseCommand):
    help = "Sweep the recall knobs on the dev split of every corpus; apply the defaults rule."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--backend", choices=["embedded", "elasticsearch", "es"])
        parser.add_argument("--corpora", default="all")
        parser.add_argument("--limit-questions", type=int, default=None, help="per persona")
        parser.add_argument("--rounds", type=int, default=2)
        parser.add_argument("--json", dest="json_path", default="")

    def handle(self, *args: Any, **options: Any) -> None:
        from lab.evaluation.corpus import load_run
        from lab.evaluation.sweep import Setting, Sweeper, coordinate_ascent
        from memory.public import DEFAULT_PLAN, resolve_plan

        corpora = [c.strip() for c in options["corpora"].split(",") if c.strip()]
        if corpora == ["all"]:
            corpora = list(CORPORA)
        try:
            personas, catalog = read_corpus(CORPUS_DIR, None, corpora)
        except CorpusError as exc:
            raise CommandError(str(exc)) from exc
        with private_run(self, options["backend"]) as runner:
            started = time.perf_counter()
            run = load_run(personas, catalog, foreign=personas[0], suffix=runner.suffix)
            self.stdout.write(f"loaded in {time.perf_counter() - started:.1f} s")
            sweeper = Sweeper(run, personas, split="dev", limit=options["limit_questions"])
            start = Setting.of(resolve_plan(DEFAULT_PLAN, settings.ATLAS_RECALL))
            outcome = coordinate_ascent(
                sweeper, start, rounds=options["rounds"], log=self.stdout.write
            )
            baseline = sweeper.measure(start)
        self._print(outcome, baseline, start)
        if options["json_path"]:
            Path(options["json_path"]).parent.mkdir(parents=True, exist_ok=True)
            report = {
                "backend": settings.ATLAS_MEMORY_BACKEND,
                "start": start.label(),
                "chosen": outcome["chosen"].label(),
                "baseline": baseline,
                "final": outcome["final"],
                "tables": outcome["tables"],
            }
            Path(options["json_path"]).write_text(json.dumps(report, indent=2, default=str))
            self.stdout.write(f"wrote {options['json_path']}")

    def _print(self, outcome: dict[str, Any], baseline: dict[str, Any], start: Any) -> None:
        for table in outcome["tables"]:
            self.stdout.write(f"round {table['round']}, {table['knob']} (chosen {table['chosen']})")
            for row in table["rows"]:
                cells = "  ".join(
                    f"{c} {s['r@10']:.3f}/{s['r@5']:.3f}" for c, s in row["per_corpus"].items()
                )
                key = row["key"]
                self.stdout.write(
                    f"  {row['value']!s:<22} worst {key[0]:.3f} mean {key[1]:.3f}  {cells}"
                )
        self.stdout.write(f"start:  {start.label()}  {_cells(baseline)}")
        self.stdout.write(f"chosen: {outcome['chosen'].label()}  {_cells(outcome['final'])}")


def _cells(result: dict[str, Any]) -> str:
    return "  ".join(
        f"{c} R@10 {s['r@10']:.3f} R@5 {s['r@5']:.3f}" for c, s in result["per_corpus"].items()
    )
