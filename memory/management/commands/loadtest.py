"""``manage.py loadtest``: concurrent REST recalls and turns against a running Atlas.

    python manage.py loadtest --seed 10000            # make a tenant, a user with 10k memories
                                                      # and a token; prints the --token to use
    python manage.py loadtest --url http://127.0.0.1:8000 --token atlas_... --user load-user \\
        --clients 1,8,32 --seconds 15 --json var/load.json

Each client loops for ``--seconds``: a recall, and every ``--turn-every``-th request a turn.
Reports p50/p95/p99 latency, requests per second and errors per client count. Traffic goes only
to the URL given (use loopback). Figures, not assertions.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import statistics
import time
from pathlib import Path
from typing import Any

import httpx2 as httpx
from django.core.management.base import BaseCommand, CommandError

QUESTIONS = [
    "what did Sarah do with the blue pot?",
    "when is the dentist visit?",
    "which VPN settings did we use?",
    "how do I reset the Lumio Hub?",
    "where are the winter tyres?",
    "what does my daughter need for school?",
]


class Command(BaseCommand):
    help = "Drive concurrent REST recalls and turns against a live server; print latency figures."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--url", default="http://127.0.0.1:8000")
        parser.add_argument("--token", default="")
        parser.add_argument("--user", default="bench-user")
        parser.add_argument("--clients", default="1,8,32")
        parser.add_argument("--seconds", type=float, default=10.0)
        parser.add_argument("--turn-every", type=int, default=5)
        parser.add_argument("--json", dest="json_path", default="")
        parser.add_argument(
            "--seed", type=int, default=0, help="create a load user with N memories"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        # One log line per request would cost the client more CPU than the requests.
        logging.getLogger("httpx2").setLevel(logging.WARNING)
        if options["seed"]:
            self._seed(options["seed"])
            return
        if not options["token"]:
            raise CommandError("Give --token (run with --seed N first to make one).")
        runs = []
        for clients in [int(c) for c in options["clients"].split(",") if c.strip()]:
            run = asyncio.run(self._run(options, clients))
            runs.append(run)
            self.stdout.write(
                f"{clients:>3} clients | {run['requests']} requests, {run['errors']} errors | "
                f"{run['rps']} req/s | p50 {run['p50_ms']} p95 {run['p95_ms']} "
                f"p99 {run['p99_ms']} ms | recall p95 {run['recall_p95_ms']} ms"
            )
        if options["json_path"]:
            Path(options["json_path"]).write_text(
                json.dumps({"url": options["url"], "runs": runs}, indent=2)
            )

    async def _run(self, options: dict[str, Any], clients: int) -> dict[str, Any]:
        base = f"{options['url'].rstrip('/')}/api/v1/users/{options['user']}"
        headers = {"Authorization": f"Bearer {options['token']}"}
        samples: dict[str, list[float]] = {"recall": [], "turn": []}
        errors: list[str] = []
        deadline = time.perf_counter() + options["seconds"]
        limits = httpx.Limits(max_connections=clients)
        async with httpx.AsyncClient(headers=headers, timeout=30.0, limits=limits) as client:

            async def worker(n: int) -> None:
                rng = random.Random(n)  # noqa: S311 - load pattern, not secrets
                count = 0
                while time.perf_counter() < deadline:
                    count += 1
                    kind = "turn" if count % options["turn_every"] == 0 else "recall"
                    body: dict[str, Any] = (
                        {"text": f"note {n}-{count}: {rng.choice(QUESTIONS)}"}
                        if kind == "turn"
                        else {"query": rng.choice(QUESTIONS), "k": 10}
                    )
                    path = f"{base}/turns" if kind == "turn" else f"{base}/recall"
                    started = time.perf_counter()
                    try:
                        response = await client.post(path, json=body)
                        ok = response.status_code < 400
                    except httpx.HTTPError as exc:
                        ok, response = False, None
                        errors.append(repr(exc))
                    samples[kind].append((time.perf_counter() - started) * 1000.0)
                    if not ok and response is not None:
                        errors.append(f"{response.status_code} {response.text[:120]}")

            began = time.perf_counter()
            await asyncio.gather(*(worker(n) for n in range(clients)))
            elapsed = time.perf_counter() - began
        every = samples["recall"] + samples["turn"]
        return {
            "clients": clients,
            "requests": len(every),
            "errors": len(errors),
            "error_samples": errors[:5],
            "rps": round(len(every) / elapsed, 1),
            **{f"{k}_ms": _pct(every, p) for k, p in (("p50", 50), ("p95", 95), ("p99", 99))},
            "recall_p95_ms": _pct(samples["recall"], 95),
            "turn_p95_ms": _pct(samples["turn"], 95),
        }

    def _seed(self, count: int) -> None:
        from django.core.management import call_command

        from tenants.models import User
        from tenants.services.tokens import token_issue

        call_command("bench", memories=str(count), writes=1, recalls=1, stdout=self.stdout)
        user = User.objects.filter(external_id="bench-user").order_by("-pk").first()
        if user is None:
            raise CommandError("bench did not create its user.")
        issued = token_issue(tenant=user.tenant, user=user, name="loadtest")
        self.stdout.write(f"--user {user.external_id} --token {issued.secret}")


def _pct(samples: list[float], p: float) -> float | None:
    if not samples:
        return None
    ordered = sorted(samples)
    if len(ordered) == 1:
        return round(ordered[0], 2)
    return round(statistics.quantiles(ordered, n=100, method="inclusive")[int(p) - 1], 2)
