"""``POST /api/v1/users/{user_id}/consolidate``: queue a consolidation run of the user."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from atlas_platform.openapi import IDEMPOTENCY_KEY, WRITE_ERRORS, errors
from atlas_platform.views import UserView
from consolidation.services.triggers import consolidation_request, run_dispatch_status


class ConsolidateOut(serializers.Serializer[Any]):
    run_id = serializers.IntegerField(help_text="The consolidation run (queued or running).")
    status = serializers.CharField(
        help_text=(
            "pending (accepted, waiting for the job broker: sent when it is back) | queued | "
            "running | done | failed."
        )
    )
    created = serializers.BooleanField(
        help_text="False when the user's run already queued or running was returned."
    )


class ConsolidateView(UserView):
    @extend_schema(
        operation_id="consolidation_request",
        tags=["consolidation"],
        request=None,
        parameters=[IDEMPOTENCY_KEY],
        responses={202: ConsolidateOut, **errors(*WRITE_ERRORS)},
    )
    def post(self, request: Request, user_id: str) -> Response:
        """Consolidate the user's new episodes into facts and playbooks, in the background.
        One run per user at a time: a second request returns the run already queued. 409
        `consolidation_off` when no chat model is configured."""
        queued = consolidation_request(user=self.subject, trigger="on_demand")
        queued.run.refresh_from_db(fields=["status"])
        body = {
            "run_id": queued.run.pk,
            "status": run_dispatch_status(queued.run),
            "created": queued.created,
        }
        return Response(ConsolidateOut(body).data, status=status.HTTP_202_ACCEPTED)
