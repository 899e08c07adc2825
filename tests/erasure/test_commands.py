"""The resume paths an operator or beat uses: ``manage.py erasure_resume`` and the periodic
``erasure.resume_stalled`` task (called in-process here)."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from erasure.models import ForgetRequest
from erasure.services import forget_request_open
from erasure.tasks import erasure_resume_stalled
from tenants.models import AuditEvent
from tests.erasure.test_services import op

pytestmark = pytest.mark.usefixtures("store")


def stalled(request: ForgetRequest, status: str = "running") -> None:
    ForgetRequest.objects.filter(pk=request.pk).update(
        status=status, lease_expires_at=timezone.now() - timedelta(seconds=1)
    )


def test_the_command_requeues_stalled_requests(
    alice, acme_admin, django_capture_on_commit_callbacks
):
    request = forget_request_open(
        reason="the subject asked", ticket="DPO-1", user=alice, scope="user", by=op(acme_admin)
    )
    stalled(request)
    out = StringIO()

    with django_capture_on_commit_callbacks() as queued:
        call_command("erasure_resume", stdout=out)

    assert f"Re-queued 1 request(s): [{request.pk}]" in out.getvalue() and len(queued) == 1


def test_the_command_retries_a_failed_request_as_an_operator(
    alice, acme_admin, acme_auditor, django_capture_on_commit_callbacks
):
    request = forget_request_open(
        reason="the subject asked", ticket="DPO-1", user=alice, scope="user", by=op(acme_admin)
    )
    ForgetRequest.objects.filter(pk=request.pk).update(status="failed")

    with pytest.raises(CommandError, match="--as"):
        call_command("erasure_resume", retry=request.pk)
    with pytest.raises(CommandError, match="Auditors"):
        call_command("erasure_resume", retry=request.pk, username="acme-auditor")
    with django_capture_on_commit_callbacks() as queued:
        call_command("erasure_resume", retry=request.pk, username="acme-admin", stdout=StringIO())

    request.refresh_from_db()
    assert request.status == "approved" and request.retry_count == 1 and len(queued) == 1


def test_the_periodic_task_requeues_as_the_erasure_worker(
    alice, acme_admin, django_capture_on_commit_callbacks
):
    request = forget_request_open(
        reason="the subject asked", ticket="DPO-1", user=alice, scope="user", by=op(acme_admin)
    )
    stalled(request, status="approved")

    with django_capture_on_commit_callbacks() as queued:
        erasure_resume_stalled()

    event = AuditEvent.objects.get(action="forget_request.resume")
    assert event.actor_label == "erasure worker" and event.target_id == str(request.pk)
    assert len(queued) == 1
