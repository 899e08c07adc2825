"""``manage.py erasure_resume``: re-queue stalled forget requests now (what the periodic
``erasure.resume_stalled`` task does), or ``--retry ID`` to send a failed one back."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from atlas_platform.exceptions import AtlasError
from erasure.models import ForgetRequest
from erasure.services import (
    OperatorPrincipal,
    forget_request_resume_stalled,
    forget_request_retry,
)
from tenants.scoping import scope_for


class Command(BaseCommand):
    help = "Re-queue forget requests whose job stalled, or retry a failed one (--retry ID)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--retry", type=int, help="Id of a failed request to retry.")
        parser.add_argument("--as", dest="username", help="Operator account (for --retry).")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["retry"] is None:
            requeued = forget_request_resume_stalled()
            self.stdout.write(f"Re-queued {len(requeued)} request(s): {requeued}")
            return
        account = get_user_model().objects.filter(username=options["username"] or "").first()
        scope = scope_for(account)
        if account is None or scope is None:
            raise CommandError("--retry needs --as <operator username>.")
        request = ForgetRequest.objects.filter(pk=options["retry"]).first()
        if request is None:
            raise CommandError(f"No forget request {options['retry']}.")
        try:
            forget_request_retry(request=request, by=OperatorPrincipal(account, scope))
        except AtlasError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(f"Request {request.pk} queued again.")
