"""``manage.py receipt_verify FILE``: check a downloaded erasure receipt (its content hash and
its HMAC signature under this deployment's ``ATLAS_RECEIPT_KEY``). Exit 0 and a summary when it
holds; exit 1 and what does not hold otherwise."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from atlas_platform.exceptions import AtlasError
from erasure.services.receipts import receipt_verify


class Command(BaseCommand):
    help = "Verify an erasure receipt (JSON downloaded from the admin): hash and signature."
    # A receipt is checked with the key alone: an auditor verifies a file on a machine without
    # the deployment's database or cluster, so the system checks (which reach both) do not run.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="The receipt JSON file ('-' reads standard input).")

    def handle(self, *args: Any, **options: Any) -> None:
        path = options["file"]
        try:
            text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
            document = json.loads(text)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise CommandError(f"Cannot read {path}: {exc}") from exc
        try:
            receipt = receipt_verify(document=document)
        except AtlasError as exc:
            raise CommandError(f"INVALID: {exc.message}") from exc
        self.stdout.write(
            f"VALID: receipt of forget request {receipt.get('forget_request_id')} "
            f"(user {receipt.get('user_external_id') or receipt.get('user_id')}, "
            f"{receipt.get('total_deleted')} erased, completed {receipt.get('completed_at')}); "
            f"content sha256 {document['content_sha256']}"
        )
