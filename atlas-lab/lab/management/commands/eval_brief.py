"""``manage.py eval_brief``: how good the session brief is, per token budget.

    python manage.py eval_brief --split dev --json var/brief-dev.json

Loads each scripted project history (``lab/evaluation/briefs/``, written by ``manage.py
generate_corpora``) into a fresh tenant, builds the focus project's brief at each budget
(500 / 1,500 / 4,000 tokens by default) and prints, per budget: the share of needed facts
present, the share of the brief's item tokens duplicated or from another project, and the
brief's size. ``--targets`` fails when the 1,500-token brief misses the issue's targets
(facts >= 0.9, nothing duplicated, nothing off-project). Choose defaults on dev; report test.
The tenants stay for inspection unless ``--clean``.
"""

from __future__ import annotations

import json
from pathlib import Path
from statistics import mean
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from lab.evaluation import brief as ev
from lab.management.commands.bench import bench_user, bench_user_remove


class Command(BaseCommand):
    help = "Score the session brief on the scripted project histories, per token budget."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--split", choices=["dev", "test", "all"], default="dev")
        parser.add_argument("--budgets", default=",".join(str(b) for b in ev.BUDGETS))
        parser.add_argument("--histories", default="", help="Only these (comma-separated names).")
        parser.add_argument("--json", dest="json_path", default="")
        parser.add_argument("--show", action="store_true", help="Print each brief too.")
        parser.add_argument("--targets", action="store_true", help="Fail below the targets.")
        parser.add_argument("--clean", action="store_true", help="Delete the tenants after.")

    def handle(self, *args: Any, **options: Any) -> None:
        budgets = [int(b) for b in options["budgets"].split(",") if b.strip()]
        wanted = {h for h in options["histories"].split(",") if h}
        chosen = [h for h in ev.histories(options["split"]) if not wanted or h["name"] in wanted]
        if not chosen:
            raise CommandError("No history to evaluate.")
        rows: dict[int, list[dict[str, Any]]] = {b: [] for b in budgets}
        for history in chosen:
            user = bench_user("brief-eval")
            loaded = ev.load(history, user)
            for budget in budgets:
                built = ev.brief(loaded, history["focus"], budget)
                row = {"history": history["name"], **ev.score(history, loaded, built)}
                rows[budget].append(row)
                if options["show"]:
                    self.stdout.write(f"--- {history['name']} @ {budget}\n{built.markdown}")
            if options["clean"]:
                clean(user)
        report = {str(b): summary(rows[b]) for b in budgets}
        self.stdout.write(table(options["split"], len(chosen), report))
        if options["json_path"]:
            out = {"split": options["split"], "budgets": report, "rows": rows}
            Path(options["json_path"]).write_text(json.dumps(out, indent=1) + "\n")
        if options["targets"]:
            check_targets(report)


def clean(user: Any) -> None:
    """The history's documents out of the store (its memories, its notes' search documents),
    then its user and tenant (``bench_user_remove``)."""
    from knowledge.models import Entity
    from memory.public import memory_erase_page, memory_ids_page, searchable_delete

    for kind in ("episodic", "semantic", "procedural"):
        mine = {"tenant_id": user.memory_tenant_id, "user_id": user.memory_id}
        while ids := memory_ids_page(**mine, memory_type=kind):
            memory_erase_page(**mine, memory_type=kind, ids=ids)
    docs = list(Entity.objects.filter(user=user).values_list("doc_id", flat=True))
    for start in range(0, len(docs), 500):
        searchable_delete(user=user, doc_ids=docs[start : start + 500])
    bench_user_remove(user)


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    missing: dict[str, int] = {}
    for row in rows:
        for fact in row["missing"]:
            kind = fact.split(":")[0].split(" ")[0] if ":" in fact else fact
            missing[kind] = missing.get(kind, 0) + 1
    return {
        "facts": round(sum(r["present"] for r in rows) / sum(r["needed"] for r in rows), 3),
        "duplicated": round(mean(r["duplicated"] for r in rows), 4),
        "off_project": round(mean(r["off_project"] for r in rows), 4),
        "tokens_mean": round(mean(r["tokens"] for r in rows), 1),
        "tokens_max": max(r["tokens"] for r in rows),
        "items_mean": round(mean(r["items"] for r in rows), 1),
        "missing": dict(sorted(missing.items())),
    }


def table(split: str, count: int, report: dict[str, dict[str, Any]]) -> str:
    lines = [
        f"eval_brief: {count} histories ({split})",
        f"{'budget':>7} {'facts':>6} {'dup':>6} {'off':>6} {'tokens':>7} {'max':>5} {'items':>6}",
    ]
    for budget, s in report.items():
        lines.append(
            f"{budget:>7} {s['facts']:>6.3f} {s['duplicated']:>6.3f} {s['off_project']:>6.3f} "
            f"{s['tokens_mean']:>7.1f} {s['tokens_max']:>5} {s['items_mean']:>6.1f}"
        )
        if s["missing"]:
            lines.append(f"{'':>7} missing: {s['missing']}")
    return "\n".join(lines)


def check_targets(report: dict[str, dict[str, Any]]) -> None:
    at = report.get("1500")
    if at is None:
        raise CommandError("--targets needs the 1500 budget.")
    if at["facts"] < 0.9 or at["duplicated"] > 0 or at["off_project"] > 0:
        raise CommandError(f"Below the targets at 1500 tokens: {at}")
