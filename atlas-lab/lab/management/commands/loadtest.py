"""``manage.py loadtest``: concurrent REST recalls and turns against a running Atlas.

    python manage.py loadtest --seed 10000            # make a tenant, a user with 10k memories
                                                      # and a token; prints the --token to use
    python manage.py loadtest --url http://127.0.0.1:8000 --token atlas_... --user load-user \\
        --clients 1,8,32 --seconds 15 --json var/load.json

Each client loops for ``--seconds``: a recall, and every ``--turn-every``-th request a turn.
Reports p50/p95/p99 latency, requests per second and errors per client count. Traffic goes only
to the URL given (use loopback). Figures, not assertions.

``--cpu NAME=PID`` (repeatable; Linux) also reports each named process's CPU time per request
over the run, and ``client`` for the load generator itself: on one machine the server, the
cluster and the database share the cores, so CPU per request says who is using them.

``--against URL --rounds N`` compares two servers (say, the code before and after a change, on
the same data): at each client count it runs ``N`` rounds, each round once against ``--url``
(A) and once against ``--against`` (B), in the order A B, B A, A B, ... so that a machine that
speeds up or slows down during the comparison weighs on both alike. It prints each run, then
the median recall p95 and req/s of each side and in how many rounds B's recall p95 was lower
(runs with errors are left out of both: a refused request is quick, not good latency).
On a shared machine one run says little; rounds of a back-to-back comparison say what a change
did (docs/performance.md).

``--protocol mcp`` sends the same load as MCP tool calls (``recall_memory`` / ``record_turn``,
JSON-RPC POSTs to ``/api/atlas/mcp/<user>``; the endpoint is stateless, so no session set-up):
a JSON-RPC error or a tool error counts as an error.

The client side is a minimal HTTP/1.1 keep-alive client on asyncio streams (one connection per
simulated client), not a general-purpose library: on a 2-core machine the load generator shares
the CPU with the server it measures, and a general client spent ~3.5 ms of CPU per request.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import statistics
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import uvloop
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
    help = "Drive concurrent recalls and turns (REST or MCP) against a live server; print figures."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--url", default="http://127.0.0.1:8000")
        parser.add_argument("--token", default="")
        parser.add_argument("--user", default="bench-user")
        parser.add_argument("--clients", default="1,8,32")
        parser.add_argument("--seconds", type=float, default=10.0)
        parser.add_argument("--turn-every", type=int, default=5)
        parser.add_argument("--protocol", choices=["rest", "mcp"], default="rest")
        parser.add_argument("--json", dest="json_path", default="")
        parser.add_argument(
            "--cpu",
            action="append",
            default=[],
            metavar="NAME=PID",
            help="report this process's CPU ms per request (e.g. server=1234, cluster=5678)",
        )
        parser.add_argument(
            "--seed", type=int, default=0, help="create a load user with N memories"
        )
        parser.add_argument(
            "--against",
            default="",
            metavar="URL",
            help="a second server (B) to compare with --url (A), in alternating rounds",
        )
        parser.add_argument(
            "--rounds", type=int, default=4, help="rounds of the --against comparison"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["seed"]:
            self._seed(options["seed"])
            return
        if not options["token"]:
            raise CommandError("Give --token (run with --seed N first to make one).")
        watched = _watched(options["cpu"])
        counts = [int(c) for c in options["clients"].split(",") if c.strip()]
        if options["against"]:
            if options["rounds"] < 1:
                raise CommandError("--rounds must be at least 1.")
            runs, comparisons = [], []
            for clients in counts:
                paired, summary = self._compare(options, clients, watched)
                runs += paired
                comparisons.append(summary)
            report: dict[str, Any] = {
                "url": options["url"],
                "against": options["against"],
                "runs": runs,
                "comparisons": comparisons,
            }
        else:
            runs = [self._measure(options, options["url"], clients, watched) for clients in counts]
            report = {"url": options["url"], "runs": runs}
        if options["json_path"]:
            Path(options["json_path"]).write_text(json.dumps(report, indent=2))

    def _compare(
        self, options: dict[str, Any], clients: int, watched: dict[str, int]
    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """``--rounds`` rounds against A (``--url``) and B (``--against``): A B, B A, A B, ..."""
        servers = {"A": options["url"], "B": options["against"]}
        runs = []
        for n in range(1, options["rounds"] + 1):
            for side in ("A", "B") if n % 2 else ("B", "A"):
                run = self._measure(options, servers[side], clients, watched, label=f"{n} {side}")
                runs.append({"round": n, "server": side, **run})
        summary = _comparison(runs, clients)
        self.stdout.write(
            f"{clients:>3} clients, {summary['rounds']} rounds: recall p95 median "
            f"A {summary['A']['recall_p95_ms']} ms, B {summary['B']['recall_p95_ms']} ms "
            f"(B lower in {summary['b_lower_rounds']} of {summary['compared_rounds']} rounds "
            "without errors); req/s median "
            f"A {summary['A']['rps']}, B {summary['B']['rps']}; errors A {summary['A']['errors']}, "
            f"B {summary['B']['errors']}"
        )
        return runs, summary

    def _measure(
        self,
        options: dict[str, Any],
        url: str,
        clients: int,
        watched: dict[str, int],
        *,
        label: str = "",
    ) -> dict[str, Any]:
        before = {name: _cpu_ms(pid) for name, pid in watched.items()}
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            run = runner.run(self._run(options, url, clients))
        served = max(run["requests"], 1)
        run["cpu_ms_per_request"] = {
            name: round((_cpu_ms(pid) - before[name]) / served, 2) for name, pid in watched.items()
        }
        cpu = " ".join(f"{k} {v}" for k, v in run["cpu_ms_per_request"].items())
        self.stdout.write(
            (f"round {label} | " if label else "")
            + f"{clients:>3} clients | {run['requests']} requests, {run['errors']} errors | "
            f"{run['rps']} req/s | p50 {run['p50_ms']} p95 {run['p95_ms']} "
            f"p99 {run['p99_ms']} ms | recall p95 {run['recall_p95_ms']} ms"
            + (f" | CPU ms/request: {cpu}" if cpu else "")
        )
        return run

    async def _run(self, options: dict[str, Any], target: str, clients: int) -> dict[str, Any]:
        url = urlsplit(target)
        if url.scheme != "http" or not url.hostname:
            raise CommandError("--url must be http://host:port (the load test speaks plain HTTP).")
        request = McpCalls(url.path, options["user"]) if options["protocol"] == "mcp" else None
        base = f"{url.path.rstrip('/')}/api/v1/users/{options['user']}"
        samples: dict[str, list[float]] = {"recall": [], "turn": []}
        errors: list[str] = []
        deadline = time.perf_counter() + options["seconds"]

        async def worker(n: int) -> None:
            rng = random.Random(n)  # noqa: S311 - load pattern, not secrets
            connection = KeepAlive(
                url.hostname or "", url.port or 80, options["token"], mcp=request is not None
            )
            count = 0
            try:
                while time.perf_counter() < deadline:
                    count += 1
                    kind = "turn" if count % options["turn_every"] == 0 else "recall"
                    body: dict[str, Any] = (
                        {"text": f"note {n}-{count}: {rng.choice(QUESTIONS)}"}
                        if kind == "turn"
                        else {"query": rng.choice(QUESTIONS), "k": 10}
                    )
                    path = f"{base}/turns" if kind == "turn" else f"{base}/recall"
                    if request is not None:
                        path, body = request.call(kind, body, count)
                    started = time.perf_counter()
                    failed_to_connect = False
                    try:
                        status, text = await connection.post(path, body)
                    except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                        errors.append(repr(exc))
                        await connection.close()
                        failed_to_connect = True
                    else:
                        if status >= 400 or (request is not None and McpCalls.failed(text)):
                            errors.append(f"{status} {text[:120]}")
                    samples[kind].append((time.perf_counter() - started) * 1000.0)
                    if failed_to_connect:
                        await asyncio.sleep(0.1)  # a server that is down: no busy loop
            finally:
                await connection.close()

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


def _comparison(runs: list[dict[str, Any]], clients: int) -> dict[str, Any]:
    """Medians per side, and the rounds in which B's recall p95 was below A's. Only runs
    without errors count: a refused request is quick, not a sample of good latency."""
    clean = [r for r in runs if r["errors"] == 0 and r["recall_p95_ms"] is not None]
    sides: dict[str, Any] = {}
    for side in ("A", "B"):
        mine = [r for r in clean if r["server"] == side]
        sides[side] = {
            "recall_p95_ms": round(statistics.median(r["recall_p95_ms"] for r in mine), 2)
            if mine
            else None,
            "rps": round(statistics.median(r["rps"] for r in mine), 1) if mine else None,
            "errors": sum(r["errors"] for r in runs if r["server"] == side),
        }
    by_round: dict[int, dict[str, float]] = {}
    for run in clean:
        by_round.setdefault(run["round"], {})[run["server"]] = run["recall_p95_ms"]
    paired = [pair for pair in by_round.values() if len(pair) == 2]
    return {
        "clients": clients,
        "rounds": len({r["round"] for r in runs}),
        "compared_rounds": len(paired),
        "b_lower_rounds": sum(1 for pair in paired if pair["B"] < pair["A"]),
        **sides,
    }


def _watched(specs: list[str]) -> dict[str, int]:
    """``--cpu`` values as {name: pid}, the load generator itself as ``client``."""
    watched = {}
    for spec in specs:
        name, _, pid = spec.partition("=")
        if not name or not pid.isdigit():
            raise CommandError(f"--cpu takes NAME=PID, not {spec!r}.")
        if not Path(f"/proc/{pid}/stat").is_file():
            raise CommandError(f"--cpu {spec}: no process {pid} (CPU figures need Linux /proc).")
        watched[name] = int(pid)
    if watched:
        watched["client"] = os.getpid()
    return watched


def _cpu_ms(pid: int) -> float:
    """User + system CPU of a process (all its threads) so far, in milliseconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    # After the command name: state is field 3, utime and stime are fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")


class McpCalls:
    """The load's recalls and turns as MCP ``tools/call`` requests for one user."""

    TOOLS = {"recall": "recall_memory", "turn": "record_turn"}

    def __init__(self, url_path: str, user: str) -> None:
        self.path = f"{url_path.rstrip('/')}/api/atlas/mcp/{user}"

    def call(self, kind: str, arguments: dict[str, Any], n: int) -> tuple[str, dict[str, Any]]:
        params = {"name": self.TOOLS[kind], "arguments": arguments}
        return self.path, {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params}

    @staticmethod
    def failed(text: str) -> bool:
        try:
            answer = json.loads(text)
        except ValueError:
            return True
        return "error" in answer or bool(answer.get("result", {}).get("isError"))


class KeepAlive:
    """One HTTP/1.1 connection that POSTs JSON and reads each response whole; reopened on
    demand after an error or a server that closes it."""

    def __init__(self, host: str, port: int, token: str, *, mcp: bool = False) -> None:
        self.host, self.port = host, port
        self.headers = f"Host: {host}:{port}\r\nAuthorization: Bearer {token}\r\n"
        if mcp:  # the streamable HTTP transport wants both; its answers here are plain JSON
            self.headers += "Accept: application/json, text/event-stream\r\n"
        self.stream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def post(self, path: str, body: dict[str, Any]) -> tuple[int, str]:
        if self.stream is None:
            self.stream = await asyncio.open_connection(self.host, self.port)
        reader, writer = self.stream
        payload = json.dumps(body).encode()
        head = (
            f"POST {path} HTTP/1.1\r\n{self.headers}Content-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n"
        )
        writer.write(head.encode() + payload)
        status_line = await reader.readline()
        if not status_line:
            raise ConnectionResetError("the server closed the connection")
        status = int(status_line.split()[1])
        length, chunked, closing = 0, False, False
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            name, value = name.strip().lower(), value.strip().lower()
            if name == "content-length":
                length = int(value)
            elif name == "transfer-encoding":
                chunked = "chunked" in value
            elif name == "connection":
                closing = value == "close"
        if chunked:
            parts = []
            while size := int((await reader.readline()).split(b";")[0], 16):
                parts.append(await reader.readexactly(size + 2))
            await reader.readline()
            data = b"".join(p[:-2] for p in parts)
        else:
            data = await reader.readexactly(length)
        if closing:
            await self.close()
        return status, data.decode("utf-8", "replace")

    async def close(self) -> None:
        if self.stream is not None:
            self.stream[1].close()
            self.stream = None


def _pct(samples: list[float], p: float) -> float | None:
    if not samples:
        return None
    ordered = sorted(samples)
    if len(ordered) == 1:
        return round(ordered[0], 2)
    return round(statistics.quantiles(ordered, n=100, method="inclusive")[int(p) - 1], 2)
