"""``manage.py es_layout_migrate``: move a deployment's memories from the per-type indices
(``<prefix>-episodic``, ``-semantic``, ``-procedural``, ``-catalog``; the layout before
2026-11-30) into the shared ``<prefix>-memories``.

    python manage.py es_layout_migrate                # copy and verify; old indices kept
    python manage.py es_layout_migrate --delete-old   # then delete each verified old index

Safe to re-run: what is already in the shared index is left as it is. Stop the writers (web and
workers) while it runs, or run it again afterwards: a document written to an old index during
the copy is only picked up by the next run. The archive index keeps its name.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from memory.engine.base import EngineError
from memory.engine.elasticsearch import ElasticsearchBackend
from memory.services.common import backend


class Command(BaseCommand):
    help = "Move memories from the per-type Elasticsearch indices into <prefix>-memories."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--delete-old",
            action="store_true",
            help="delete each old index once all its documents are verified in the new one",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        store = backend()
        if not isinstance(store, ElasticsearchBackend):
            raise CommandError("The memory backend is not Elasticsearch: nothing to migrate.")
        try:
            moves = store.migrate_per_type_indices(delete_old=options["delete_old"])
        except EngineError as exc:
            raise CommandError(str(exc)) from exc
        if not moves:
            self.stdout.write("No per-type indices left: nothing to migrate.")
        for move in moves:
            fate = "deleted" if move.deleted else "kept (run with --delete-old to remove it)"
            self.stdout.write(
                f"{move.index}: {move.documents} documents in the shared index "
                f"({move.copied} copied now); old index {fate}"
            )
