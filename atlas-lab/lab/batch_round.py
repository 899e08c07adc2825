"""One round of ``manage.py bench_batch``, run as a script in a child process so that the same
round can run against another checkout's code (``PYTHONPATH`` names the tree):

    python atlas-lab/lab/batch_round.py --backend es --ops 100 --entities 100

Through the services the API calls (``agents.api.operations.parse_operation`` +
``operations_apply``), with the model loaded and warmed first: ``--batches`` operations
batches of ``--ops`` ``memory.write`` operations each (the agents' replay), then
``--entities`` knowledge notes in operations batches of ``--ops`` ``entity.upsert``
operations (what the CLI's sync replays). Prints one JSON line: wall seconds and CPU seconds
of each part. Only APIs both trees offer are used.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import random
import secrets
import tempfile
import time
from typing import Any


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", choices=["embedded", "es"], required=True)
    parser.add_argument("--ops", type=int, default=100)
    parser.add_argument("--batches", type=int, default=2)
    parser.add_argument("--entities", type=int, default=100)
    o = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lab.settings")
    workdir = tempfile.mkdtemp(prefix="bench-batch-")
    os.environ["ATLAS_EMBEDDED_PATH"] = os.path.join(workdir, "memory.sqlite3")
    os.environ["ATLAS_MEMORY_BACKEND"] = "elasticsearch" if o.backend == "es" else "embedded"
    import django

    django.setup()
    from django.conf import settings

    settings.ATLAS_MEMORY_BACKEND = os.environ["ATLAS_MEMORY_BACKEND"]
    from agents.api.operations import parse_operation
    from agents.services.agents import agent_register
    from agents.services.operations import operations_apply
    from agents.services.projects import project_register
    from lab.management.commands.bench import bench_user, bench_user_remove, synthetic_text
    from lab.management.commands.bench_knowledge import note
    from memory.public import searchable_embed

    def apply(operations: list[Any]) -> Any:
        # A tree from before batches knew their agent (31ba811, the batch issue's baseline)
        # takes the user and the operations only.
        if "agent" in inspect.signature(operations_apply).parameters:
            return operations_apply(user=user, agent=agent, operations=operations)
        return operations_apply(user=user, operations=operations)

    rng = random.Random(11)  # noqa: S311 - synthetic data
    user = bench_user("bench-batch")
    agent = agent_register(user=user, slug="bench").agent
    searchable_embed(texts=["warm the model up"])  # the model's load is not the batch's
    run = secrets.token_hex(3)
    result: dict[str, Any] = {"backend": o.backend, "ops": o.ops, "batches": o.batches}
    try:
        wall = cpu = 0.0
        applied = 0
        written: list[str] = []
        for b in range(o.batches):
            items = [
                {
                    "id": f"{run}-{b}-{n}",
                    "op": "memory.write",
                    "args": {"text": synthetic_text(rng)},
                }
                for n in range(o.ops)
            ]
            operations = [parse_operation(agent, item) for item in items]
            w0, c0 = time.perf_counter(), time.process_time()
            outcomes = apply(operations)
            wall += time.perf_counter() - w0
            cpu += time.process_time() - c0
            applied += sum(x.status == "applied" for x in outcomes)
            written += [x.result["id"] for x in outcomes if x.result and "id" in x.result]
        result["batch"] = {"applied": applied, "wall_s": wall, "cpu_s": cpu}
        project = project_register(user=user, path=f"/bench/{run}").project
        notes = [note(n, o.entities, rng) for n in range(o.entities)]
        w0, c0 = time.perf_counter(), time.process_time()
        indexed = 0
        for start in range(0, len(notes), o.ops):
            items = [
                {
                    "id": f"{run}-e{start + n}",
                    "op": "entity.upsert",
                    "args": {"project_key": project.key, "path": path, "content": content},
                }
                for n, (path, content) in enumerate(notes[start : start + o.ops])
            ]
            operations = [parse_operation(agent, item) for item in items]
            outcomes = apply(operations)
            indexed += sum(x.status == "applied" for x in outcomes)
        result["entities"] = {
            "count": indexed,
            "wall_s": time.perf_counter() - w0,
            "cpu_s": time.process_time() - c0,
        }
    finally:
        _clean(user, written, bench_user_remove)
    print("ROUND " + json.dumps(result))


def _clean(user: Any, written: list[str], remove: Any) -> None:
    """The round's memories and entity documents out of the store, then its tenant."""
    from knowledge.models import Entity
    from memory.public import memory_erase_page, searchable_delete

    for start in range(0, len(written), 500):
        memory_erase_page(
            tenant_id=user.memory_tenant_id,
            user_id=user.memory_id,
            memory_type="semantic",
            ids=written[start : start + 500],
        )
    docs = list(Entity.objects.filter(user=user).values_list("doc_id", flat=True))
    for start in range(0, len(docs), 500):
        searchable_delete(user=user, doc_ids=docs[start : start + 500])
    remove(user)


if __name__ == "__main__":
    main()
