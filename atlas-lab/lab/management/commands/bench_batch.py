"""``manage.py bench_batch``: an operations batch of memory writes and knowledge indexing, per
backend, this tree against another checkout (``--against``, e.g. main's), interleaved.

    python manage.py bench_batch --against /work/main --rounds 3 --ops 100 --entities 50

Each round runs ``atlas-lab/lab/batch_round.py`` in a child process per backend and per tree
(the tree's code on ``PYTHONPATH``; the order of the trees alternates from round to round):
``--batches`` batches of ``--ops`` ``memory.write`` operations through ``operations_apply``,
then ``--entities`` knowledge notes. Prints, per backend and tree, the medians over the rounds
of ops/s and CPU ms per op (the child's process time: the server's side of the work, the
model included; not Elasticsearch's or PostgreSQL's), entities/s and CPU ms per entity, the
ratios this tree / the other, and the load average before and after. Figures, not assertions.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

ROUND = Path(__file__).resolve().parents[2] / "batch_round.py"
HERE = ROUND.parents[2]


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


class Command(BaseCommand):
    help = "Operations batch ops/s and knowledge entities/s, this tree against another."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--against", default="", help="Another checkout (its root).")
        parser.add_argument("--backends", nargs="+", default=["embedded", "es"])
        parser.add_argument("--rounds", type=int, default=3)
        parser.add_argument("--ops", type=int, default=100)
        parser.add_argument("--batches", type=int, default=2)
        parser.add_argument("--entities", type=int, default=50)
        parser.add_argument("--json", dest="json_path", default="")

    def handle(self, *args: Any, **o: Any) -> None:
        trees = {"this": HERE}
        if o["against"]:
            other = Path(o["against"]).resolve()
            if not (other / "manage.py").exists():
                raise CommandError(f"{other} is not a checkout of Atlas.")
            trees = {"before": other, "after": HERE}
        started = loadavg()
        rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for n in range(o["rounds"]):
            order = list(trees.items())
            if n % 2:
                order.reverse()
            for backend in o["backends"]:
                for name, tree in order:
                    result = self._round(tree, backend, o)
                    rows.setdefault((backend, name), []).append(result)
                    self.stderr.write(f"round {n + 1} {backend} {name}: {json.dumps(result)}")
        summary = self._summary(rows, list(trees))
        summary["loadavg"] = {"before": started, "after": loadavg()}
        self.stdout.write(json.dumps(summary, indent=2))
        if o["json_path"]:
            Path(o["json_path"]).write_text(json.dumps(summary, indent=2) + "\n")

    def _round(self, tree: Path, backend: str, o: dict[str, Any]) -> dict[str, Any]:
        env = {**os.environ, "PYTHONPATH": f"{tree}:{tree / 'atlas-lab'}"}
        argv = [sys.executable, str(ROUND), "--backend", backend, "--ops", str(o["ops"])]
        argv += ["--batches", str(o["batches"]), "--entities", str(o["entities"])]
        done = subprocess.run(  # noqa: S603 - our own script
            argv, cwd=tree, env=env, capture_output=True, text=True, check=False, timeout=1800
        )
        lines = [x for x in done.stdout.splitlines() if x.startswith("ROUND ")]
        if done.returncode or not lines:
            raise CommandError(f"round failed in {tree}: {done.stderr[-2000:]}")
        result: dict[str, Any] = json.loads(lines[-1][len("ROUND ") :])
        return result

    @staticmethod
    def _summary(rows: dict[tuple[str, str], list[dict[str, Any]]], names: list[str]) -> Any:
        out: dict[str, Any] = {}
        for (backend, name), runs in rows.items():
            ops = [r["batch"]["applied"] / r["batch"]["wall_s"] for r in runs]
            cpu = [1000 * r["batch"]["cpu_s"] / max(r["batch"]["applied"], 1) for r in runs]
            ents = [r["entities"] for r in runs if r["entities"]["count"]]
            out.setdefault(backend, {})[name] = {
                "batch_ops_per_s": round(statistics.median(ops), 1),
                "batch_cpu_ms_per_op": round(statistics.median(cpu), 2),
                "entities_per_s": (
                    round(statistics.median(e["count"] / e["wall_s"] for e in ents), 1)
                    if ents
                    else None
                ),
                "entity_cpu_ms": (
                    round(statistics.median(1000 * e["cpu_s"] / e["count"] for e in ents), 1)
                    if ents
                    else None
                ),
                "rounds": len(runs),
            }
        if names == ["before", "after"]:
            for figures in out.values():
                before, after = figures.get("before"), figures.get("after")
                if before and after:
                    figures["ratio_ops_per_s"] = round(
                        after["batch_ops_per_s"] / before["batch_ops_per_s"], 2
                    )
                    figures["ratio_cpu_per_op"] = round(
                        after["batch_cpu_ms_per_op"] / before["batch_cpu_ms_per_op"], 2
                    )
                    if before["entities_per_s"] and after["entities_per_s"]:
                        figures["ratio_entities_per_s"] = round(
                            after["entities_per_s"] / before["entities_per_s"], 2
                        )
                        figures["ratio_cpu_per_entity"] = round(
                            after["entity_cpu_ms"] / before["entity_cpu_ms"], 2
                        )
        return out
