"""``manage.py bench_scale``: the embedded backend with one user of 10k / 100k / 1M memories.

    python manage.py bench_scale --sizes 10000,100000 --compare /tmp/main-checkout

Each size is one SQLite file under ``--store-dir`` (kept, so a later run reuses it), loaded
once through ``memory_import`` with **cached vectors**: embedding a million texts with the
model is out of reach here, so ``--distinct`` synthetic texts are embedded once with the
configured model (kept as ``vectors.npy``) and each loaded memory takes one of them plus small
noise (its text is a synthetic sentence of its own, for FTS5). Queries and turns are embedded
by the model itself. ``--copies-of 100000`` makes a missing larger size from that size's file
instead (its rows copied with new ids and fresh noise on the vectors, FTS rows written alike):
how the 1M store is made, the loader taking about an hour at 1M on a busy machine.

Every figure comes from a child process per (size, checkout, round), so peak RSS is that of
one process serving one user: the first recall (snapshot load, index build), then the
``--recalls`` recall p50 / CPU per recall, then ``--turns`` turns with a long message (CPU per
turn; its ratio to a recall's). ``--compare`` names other checkouts (e.g. main) run the same
way, interleaved round by round. The floor is another child: the query embedded, numpy top-80
over the user's float32 units, FTS5 top-80 (``ORDER BY bm25 LIMIT 80`` inside SQLite), RRF and
the ten sources read, on the same file with the same embedder. Figures, not assertions.
"""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.core.management.base import BaseCommand

from lab.management.commands.bench import OBJECTS, PLACES, SUBJECTS, VERBS, bench_user

NOISE = 0.35  # the noise added to a cached unit vector (then normalised again)
FILLER = [
    "and then",
    "because",
    "so I think",
    "but honestly",
    "which means",
    "after that",
    "while",
    "and also",
]


def base_text(n: int) -> str:
    rng = random.Random(n)  # noqa: S311 - synthetic data
    return (
        f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} in {rng.choice(PLACES)}"
        f" with {rng.choice(OBJECTS)} for {rng.choice(SUBJECTS)}"
    )


def long_message(rng: random.Random) -> str:
    """A long turn (~90 words) of the corpus's common words, as a chatty user writes."""
    parts = []
    for _ in range(8):
        parts.append(
            f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(OBJECTS)} in "
            f"{rng.choice(PLACES)} {rng.choice(FILLER)}"
        )
    return " ".join(parts) + " what do you remember about all of that?"


def p50(values: list[float]) -> float:
    return round(statistics.median(values), 2) if values else float("nan")


def peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


class Command(BaseCommand):
    help = "The embedded backend at 10k / 100k / 1M memories for one user, against a floor."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--sizes", default="10000,100000")
        parser.add_argument("--recalls", type=int, default=30)
        parser.add_argument("--turns", type=int, default=15)
        parser.add_argument("--rounds", type=int, default=1)
        parser.add_argument("--distinct", type=int, default=2000)
        parser.add_argument("--store-dir", default=str(Path(settings.VAR_DIR) / "bench-scale"))
        parser.add_argument("--compare", action="append", default=[], help="another checkout")
        parser.add_argument("--no-floor", action="store_true")
        parser.add_argument("--json", dest="json_path", default="")
        parser.add_argument("--child", choices=["load", "run", "floor"], default=None)
        parser.add_argument("--size", type=int, default=0)
        parser.add_argument("--copies-of", type=int, default=0, help="make a size from this one")

    def handle(self, *args: Any, **o: Any) -> None:
        store_dir = Path(o["store_dir"])
        if o["child"]:
            result = getattr(self, f"_child_{o['child']}")(store_dir, o)
            self.stdout.write("RESULT " + json.dumps(result))
            return
        store_dir.mkdir(parents=True, exist_ok=True)
        self._vectors(store_dir, o["distinct"])
        sizes = [int(s) for s in o["sizes"].split(",") if s.strip()]
        here = str(Path(settings.BASE_DIR))
        rows: list[dict[str, Any]] = []
        for size in sizes:
            if not (store_dir / f"scale-{size}.json").exists() and o["copies_of"]:
                self.stdout.write(f"copying {o['copies_of']} memories to {size} ...")
                rows.append(copy_store(store_dir, o["copies_of"], size) | {"code": "copy"})
            if not (store_dir / f"scale-{size}.json").exists():
                self.stdout.write(f"loading {size} memories ...")
                loader = (o["compare"] or [here])[0]  # the same load for every checkout
                rows.append(self._spawn(loader, "load", size, store_dir, o) | {"code": "load"})
            for _ in range(o["rounds"]):
                for code in [*o["compare"], here]:
                    row = self._spawn(code, "run", size, store_dir, o) | {"code": code}
                    self._print(row)
                    rows.append(row)
                if not o["no_floor"]:
                    row = self._spawn(here, "floor", size, store_dir, o) | {"code": "floor"}
                    self._print(row)
                    rows.append(row)
        if o["json_path"]:
            Path(o["json_path"]).write_text(json.dumps(rows, indent=2))

    # --- the parent -----------------------------------------------------------------------------
    def _spawn(self, root: str, child: str, size: int, store_dir: Path, o: dict[str, Any]) -> Any:
        env = os.environ | {
            "PYTHONPATH": f"{root}:{root}/atlas-lab",
            "ATLAS_EMBEDDED_PATH": str(store_dir / f"scale-{size}.sqlite3"),
            "ATLAS_MEMORY_BACKEND": "embedded",
        }
        command = [
            sys.executable, f"{root}/manage.py", "bench_scale", "--child", child,
            "--size", str(size), "--store-dir", str(store_dir), "--recalls", str(o["recalls"]),
            "--turns", str(o["turns"]), "--distinct", str(o["distinct"]),
        ]  # fmt: skip
        # In the checkout's own folder: Celery's Django fixup puts the working directory first
        # on sys.path, so a child started from another checkout imported that one's apps.
        done = subprocess.run(  # noqa: S603
            command, env=env, cwd=root, capture_output=True, text=True, check=False
        )
        for line in done.stdout.splitlines():
            if line.startswith("RESULT "):
                return json.loads(line[len("RESULT ") :]) | {"loadavg": _loadavg()}
        self.stderr.write(done.stdout[-3000:] + done.stderr[-3000:])
        return {"size": size, "error": done.returncode, "loadavg": _loadavg()}

    def _vectors(self, store_dir: Path, distinct: int) -> Any:
        path = store_dir / "vectors.npy"
        if path.exists():
            return np.load(path)
        from memory.public import embedder

        texts = [base_text(n) for n in range(distinct)]
        vectors = np.asarray(embedder().embed(texts), dtype=np.float32)
        np.save(path, vectors)
        return vectors

    def _print(self, row: dict[str, Any]) -> None:
        if "error" in row:
            self.stdout.write(f"{row['size']:>8} {row['code']}: failed ({row['error']})")
            return
        figures = " | ".join(
            f"{name} {value}" for name, value in row.items() if name not in ("size", "code")
        )
        self.stdout.write(f"{row['size']:>8} {row['code']}: {figures}")

    # --- the children ---------------------------------------------------------------------------
    def _child_load(self, store_dir: Path, o: dict[str, Any]) -> dict[str, Any]:
        from memory.public import ImportedMemory, embedder, memory_import

        vectors = np.load(store_dir / "vectors.npy")
        rng = random.Random(o["size"])  # noqa: S311 - synthetic data
        noise = np.random.default_rng(o["size"])
        model = embedder()
        queue: list[Any] = []

        def cached(texts: Any) -> Any:
            picked = vectors[[queue.pop(0) for _ in texts]]
            picked = picked + NOISE * noise.standard_normal(picked.shape).astype(np.float32) / 20
            return picked / np.linalg.norm(picked, axis=1, keepdims=True)

        model.embed = cached  # type: ignore[method-assign]  # the load's vectors: cached + noise
        user = bench_user("scale")
        now = datetime.now(UTC)
        started, count = time.perf_counter(), o["size"]
        kinds = ["episodic", "episodic", "semantic", "procedural"]
        for start in range(0, count, 2000):
            memories = []
            for _ in range(min(2000, count - start)):
                n = rng.randrange(len(vectors))
                queue.append(n)
                kind = rng.choice(kinds)
                memories.append(
                    ImportedMemory(
                        memory_type=kind,
                        text=f"{base_text(n)} on day {rng.randint(1, 365)} "
                        f"(ref {rng.getrandbits(24):06x})",
                        timestamp=now - timedelta(days=rng.randint(0, 900)),
                        session_id=f"s{rng.randrange(max(1, count // 20))}"
                        if kind == "episodic"
                        else None,
                    )
                )
            memory_import(user=user, memories=memories)
        info = {"user": user.pk, "memories": count}
        (store_dir / f"scale-{o['size']}.json").write_text(json.dumps(info))
        return {"size": count, "load_s": round(time.perf_counter() - started, 1)}

    def _user(self, store_dir: Path, size: int) -> Any:
        from tenants.models import User

        info = json.loads((store_dir / f"scale-{size}.json").read_text())
        return User.objects.select_related("tenant").get(pk=info["user"])

    def _child_run(self, store_dir: Path, o: dict[str, Any]) -> dict[str, Any]:
        from memory.public import RecallPlan, memory_recall, memory_turn_record

        user = self._user(store_dir, o["size"])
        rng = random.Random(11)  # noqa: S311 - the same queries in every child
        queries = [
            f"what did {rng.choice(SUBJECTS)} do with {rng.choice(OBJECTS)}?"
            for _ in range(o["recalls"])
        ]
        plan = RecallPlan(rerank=False)
        mark, cpu = time.perf_counter(), time.process_time()
        memory_recall(user=user, query="what happened with the garden hose?", k=10, plan=plan)
        first_s, first_cpu_s = time.perf_counter() - mark, time.process_time() - cpu
        walls, cpus = [], []
        for query in queries:
            mark, cpu = time.perf_counter(), time.process_time()
            memory_recall(user=user, query=query, k=10, plan=plan)
            walls.append((time.perf_counter() - mark) * 1000)
            cpus.append((time.process_time() - cpu) * 1000)
        turn_cpus = []
        for n in range(o["turns"]):
            cpu = time.process_time()
            memory_turn_record(user=user, text=long_message(rng), session_id=f"bench-{n}")
            turn_cpus.append((time.process_time() - cpu) * 1000)
        return {
            "size": o["size"],
            "first_recall_s": round(first_s, 2),
            "first_recall_cpu_s": round(first_cpu_s, 2),
            "recall_p50_ms": p50(walls),
            "recall_cpu_ms": p50(cpus),
            "turn_cpu_ms": p50(turn_cpus),
            "turn_over_recall": round(p50(turn_cpus) / p50(cpus), 2),
            "peak_rss_mb": peak_rss_mb(),
        }

    def _child_floor(self, store_dir: Path, o: dict[str, Any]) -> dict[str, Any]:
        from memory.public import embedder

        self._user(store_dir, o["size"])  # the file is the bench's
        conn = sqlite3.connect(settings.ATLAS_EMBEDDED_PATH)
        rows = conn.execute(
            "SELECT seq, unit FROM memories WHERE user_id IS NOT NULL AND unit IS NOT NULL"
        ).fetchall()
        seqs = np.array([seq for seq, _ in rows], dtype=np.int64)
        units = np.frombuffer(b"".join(unit for _, unit in rows), dtype=np.float32).reshape(
            len(rows), -1
        )
        del rows
        rng = random.Random(11)  # noqa: S311 - the same queries as the runs
        queries = [
            f"what did {rng.choice(SUBJECTS)} do with {rng.choice(OBJECTS)}?"
            for _ in range(o["recalls"])
        ]
        model = embedder()
        model.embed(["warm up"])
        walls, cpus = [], []
        for query in queries:
            mark, cpu = time.perf_counter(), time.process_time()
            vector = np.asarray(model.embed([query])[0], dtype=np.float32)
            scores = units @ vector
            top = np.argpartition(-scores, 80)[:80]
            dense = seqs[top[np.argsort(-scores[top])]].tolist()
            terms = " OR ".join(f'"{w}"' for w in query.strip("?").split() if len(w) > 2)
            lexical = [
                row[0]
                for row in conn.execute(
                    "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?"
                    " ORDER BY bm25(memories_fts) LIMIT 80",
                    (f"text : ({terms})",),
                )
            ]
            fused: dict[int, float] = {}
            for ranked in (dense, lexical):
                for rank, seq in enumerate(ranked, 1):
                    fused[seq] = fused.get(seq, 0.0) + 1.0 / (60 + rank)
            best = sorted(fused, key=lambda seq: -fused[seq])[:10]
            conn.execute(
                "SELECT source FROM memories WHERE seq IN (SELECT value FROM json_each(?))",
                (json.dumps(best),),
            ).fetchall()
            walls.append((time.perf_counter() - mark) * 1000)
            cpus.append((time.process_time() - cpu) * 1000)
        return {
            "size": o["size"],
            "recall_p50_ms": p50(walls),
            "recall_cpu_ms": p50(cpus),
            "peak_rss_mb": peak_rss_mb(),
        }


def copy_store(store_dir: Path, origin_size: int, size: int) -> dict[str, Any]:
    """Make the ``size`` store from the ``origin_size`` one: the file copied, then its rows again
    with new ids, each unit vector with fresh noise (``NOISE / 20`` per dimension, as the load
    adds), until it holds ``size`` rows; the FTS rows written as the store writes them."""
    started = time.perf_counter()
    target = store_dir / f"scale-{size}.sqlite3"
    with (
        sqlite3.connect(store_dir / f"scale-{origin_size}.sqlite3") as origin,
        sqlite3.connect(target) as copy,
    ):
        origin.backup(copy)
    conn = sqlite3.connect(target, isolation_level=None)
    conn.execute("DELETE FROM settings WHERE name = 'instance'")  # another store
    columns = [row[1] for row in conn.execute("PRAGMA table_info(memories)") if row[1] != "seq"]
    rows = conn.execute(f"SELECT {', '.join(columns)} FROM memories ORDER BY seq").fetchall()  # noqa: S608 - the table's own names
    noise = np.random.default_rng(size)
    at = {name: n for n, name in enumerate(columns)}
    conn.execute("BEGIN")
    (rev,) = conn.execute("UPDATE owners SET rev = rev + 1 RETURNING rev").fetchone()
    insert = (
        f"INSERT INTO memories ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"  # noqa: S608
        " RETURNING seq"
    )
    for _ in range(round(size / len(rows)) - 1):  # size: about, from a store with some turns
        for row in rows:
            values = list(row)
            source = json.loads(values[at["source"]])
            source["id"] = values[at["id"]] = uuid.uuid4().hex
            unit = np.frombuffer(values[at["unit"]], dtype=np.float32)
            unit = unit + NOISE / 20 * noise.standard_normal(unit.shape).astype(np.float32)
            unit /= np.linalg.norm(unit)
            values[at["unit"]] = unit.tobytes()
            values[at["embedding"]] = unit.astype(np.float64).tobytes()
            values[at["source"]] = json.dumps(source, ensure_ascii=False)
            values[at["rev"]] = rev
            (seq,) = conn.execute(insert, values).fetchone()
            fields = [source.get(name) for name in ("text", "name", "description", "trigger")]
            conn.execute(
                "INSERT INTO memories_fts (rowid, owner, text, name, description, trigger_text)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (seq, values[at["owner"]], *fields),
            )
            if source.get("context"):
                conn.execute(
                    "INSERT INTO memories_context_fts (rowid, owner, context) VALUES (?, ?, ?)",
                    (seq, values[at["owner"]], source["context"]),
                )
    conn.execute("COMMIT")
    conn.close()
    shutil.copy(store_dir / f"scale-{origin_size}.json", store_dir / f"scale-{size}.json")
    return {"size": size, "copy_s": round(time.perf_counter() - started, 1)}


def _loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])
