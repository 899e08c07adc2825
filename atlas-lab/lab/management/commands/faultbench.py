"""``manage.py faultbench``: writes under injected faults against a live Atlas, then counts what
went wrong in the store and the audit trail.

    python manage.py faultbench --url http://127.0.0.1:8000 --token atlas_... --user u1 \\
        --writes 300 --clients 8 --freeze ES_PID --kill-restart 'SERVER_PID_FILE:COMMAND'

Every write carries a unique marker and an ``Idempotency-Key``; a write that fails (a 5xx, a
timeout, a cut connection, 409 "in progress") is retried with the same key and body, as a
client should, up to ``--attempts`` times. Meanwhile the fault loop, every ``--every-s``
seconds, freezes each ``--freeze`` process (SIGSTOP) for ``--freeze-s`` seconds (the dedicated
Elasticsearch node: writes time out, and the node applies them when it runs again). Only give
pids of processes started for the bench: never a shared service.

At the end (after every process runs again and ``--settle-s``), it reads the cluster and the
database this command is configured with (``ATLAS_ES_URL``, ``DATABASE_URL``: the server's) and
prints:

- lost: writes the server acknowledged (2xx) whose marker is not in the store;
- duplicated: extra documents of a marker beyond the first;
- orphaned: documents of the bench with no audit row naming them;
- stuck: writes whose retries ended on ``409 idempotency_in_progress``;
- unacked: writes that never got a 2xx within their attempts (not an error by itself).

With ``--batch N`` the writes go as operations batches of N ``memory.write`` operations
(``POST .../operations``, each marker its operation id; ``--token`` bound to an agent): an
operation answered ``retry`` is sent again in the next batch of the same client with the
same id and args, a batch that fails as a whole is sent again as it was; ``stuck``: operations
whose last answer was ``retry`` with ``in_progress``.

Figures, not assertions (tests/faults/ asserts the same properties per fault point).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx2 as httpx
from django.conf import settings
from django.core.management.base import BaseCommand

from atlas_platform.cluster import get_cluster
from tenants.models import AuditEvent

MARK = "faultbench"


class Command(BaseCommand):
    help = "Write under injected faults (freeze dedicated processes) and count lost/dup/orphans."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--url", required=True)
        parser.add_argument("--token", required=True)
        parser.add_argument("--user", required=True)
        parser.add_argument("--writes", type=int, default=200)
        parser.add_argument("--clients", type=int, default=8)
        parser.add_argument("--attempts", type=int, default=30)
        parser.add_argument("--timeout-s", type=float, default=15.0)
        parser.add_argument("--freeze", type=int, action="append", default=[], help="pid")
        parser.add_argument("--freeze-s", type=float, default=4.0)
        parser.add_argument("--every-s", type=float, default=8.0)
        parser.add_argument("--settle-s", type=float, default=5.0)
        parser.add_argument("--batch", type=int, default=0, help="operations per batch")
        parser.add_argument("--json", default="")

    def handle(self, *args: Any, **o: Any) -> None:
        run = uuid.uuid4().hex[:8]
        stop = threading.Event()
        faults = threading.Thread(target=self._faults, args=(o, stop), daemon=True)
        faults.start()
        started = time.monotonic()
        markers = [f"{run}x{i}" for i in range(o["writes"])]
        with ThreadPoolExecutor(max_workers=o["clients"]) as pool:
            if o["batch"]:
                groups = [markers[i : i + o["batch"]] for i in range(0, len(markers), o["batch"])]
                outcomes = [x for g in pool.map(lambda g: self._batch(o, g), groups) for x in g]
            else:
                outcomes = list(pool.map(lambda m: self._write(o, m), markers))
        stop.set()
        faults.join()
        for pid in o["freeze"]:
            _signal(pid, signal.SIGCONT)
        elapsed = time.monotonic() - started
        time.sleep(o["settle_s"])
        figures = self._count(run, outcomes)
        figures.update(writes=o["writes"], seconds=round(elapsed, 1), run=run)
        self.stdout.write(json.dumps(figures))
        if o["json"]:
            with open(o["json"], "w") as out:
                json.dump(figures, out, indent=2)

    def _faults(self, o: dict[str, Any], stop: threading.Event) -> None:
        while not stop.wait(o["every_s"]):
            for pid in o["freeze"]:
                _signal(pid, signal.SIGSTOP)
            stop.wait(o["freeze_s"])
            for pid in o["freeze"]:
                _signal(pid, signal.SIGCONT)

    def _write(self, o: dict[str, Any], marker: str) -> dict[str, Any]:
        url = f"{o['url']}/api/v1/users/{o['user']}/memories"
        headers = {"Authorization": f"Bearer {o['token']}", "Idempotency-Key": marker}
        body = {"text": f"{MARK} marker {marker}", "memory_type": "semantic"}
        last = "none"
        for _ in range(o["attempts"]):
            try:
                response = httpx.post(url, json=body, headers=headers, timeout=o["timeout_s"])
            except httpx.HTTPError as exc:
                last = type(exc).__name__
                time.sleep(0.5)
                continue
            if response.status_code < 300:
                return {"marker": marker, "acked": True, "id": response.json().get("id")}
            last = str(response.status_code)
            if response.status_code == 409:
                last = "in_progress"
            if response.status_code < 500 and response.status_code not in (409, 429):
                break  # refused: retrying the same request cannot help
            time.sleep(min(float(response.headers.get("Retry-After", "1")), 5.0))
        return {"marker": marker, "acked": False, "last": last}

    def _batch(self, o: dict[str, Any], markers: list[str]) -> list[dict[str, Any]]:
        """One client's batch of writes, resent (the operations still to retry) until each is
        answered or ``--attempts`` runs out."""
        url = f"{o['url']}/api/v1/users/{o['user']}/operations"
        headers = {"Authorization": f"Bearer {o['token']}"}
        done: dict[str, dict[str, Any]] = {}
        last: dict[str, str] = dict.fromkeys(markers, "none")
        for _ in range(o["attempts"]):
            pending = [m for m in markers if m not in done]
            if not pending:
                break
            ops = [
                {"id": m, "op": "memory.write", "args": {"text": f"{MARK} marker {m}"}}
                for m in pending
            ]
            try:
                response = httpx.post(
                    url, json={"operations": ops}, headers=headers, timeout=o["timeout_s"]
                )
            except httpx.HTTPError as exc:
                last.update(dict.fromkeys(pending, type(exc).__name__))
                time.sleep(0.5)
                continue
            if response.status_code != 200:
                last.update(dict.fromkeys(pending, str(response.status_code)))
                time.sleep(min(float(response.headers.get("Retry-After", "1")), 5.0))
                continue
            for result in response.json()["results"]:
                marker = result["id"]
                if result["status"] in ("applied", "duplicate"):
                    done[marker] = {"marker": marker, "acked": True, "id": result["result"]["id"]}
                elif result["status"] == "retry":
                    code = (result.get("error") or {}).get("code", "")
                    last[marker] = "in_progress" if code == "in_progress" else "retry"
                else:  # refused: sending it again cannot help
                    done[marker] = {"marker": marker, "acked": False, "last": result["status"]}
            if len(done) < len(markers):
                time.sleep(1.0)
        return [done.get(m) or {"marker": m, "acked": False, "last": last[m]} for m in markers]

    def _count(self, run: str, outcomes: list[dict[str, Any]]) -> dict[str, Any]:
        cluster = get_cluster()
        if cluster is None:
            raise SystemExit("faultbench reads the cluster: set ATLAS_ES_URL to the server's")
        index = f"{settings.ATLAS_ES_INDEX_PREFIX}-*"
        cluster.client.indices.refresh(index=index)
        found = cluster.client.search(
            index=index,
            size=10_000,
            query={"match": {"text": MARK}},
            source_includes=["id", "text"],
        )["hits"]["hits"]
        docs = [h["_source"] for h in found if f"marker {run}x" in h["_source"]["text"]]
        per_marker = Counter(d["text"].rsplit(" ", 1)[1] for d in docs)
        ids = [d["id"] for d in docs]
        audited = set(
            AuditEvent.objects.filter(metadata__memory_id__in=ids).values_list(
                "metadata__memory_id", flat=True
            )
        )
        acked = [x for x in outcomes if x["acked"]]
        return {
            "acked": len(acked),
            "lost": sum(1 for x in acked if per_marker[x["marker"]] == 0),
            "duplicated": sum(n - 1 for n in per_marker.values() if n > 1),
            "orphaned": sum(1 for i in ids if i not in audited),
            "stuck": sum(1 for x in outcomes if not x["acked"] and x["last"] == "in_progress"),
            "unacked": len(outcomes) - len(acked),
            "documents": len(docs),
        }


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)
