"""The forget-request services on the embedded store: who may do what, and the job itself
(run in-process here; tests/erasure/test_worker.py proves the real worker path)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from atlas_platform.exceptions import Conflict, NotFound, PermissionDenied, ValidationError
from atlas_platform.models import LedgerEntry
from erasure.models import ErasedPage, ErasureProgress, ForgetRequest
from erasure.services import (
    OperatorPrincipal,
    forget_request_approve,
    forget_request_execute,
    forget_request_open,
    forget_request_reject,
    forget_request_resume_stalled,
    forget_request_retry,
)
from memory.engine.base import EngineError
from memory.models import SessionCursor
from memory.services.common import backend
from memory.services.scoping import user_read_scope
from memory.services.writes import memory_turn_record, memory_write
from tenants.models import AuditEvent, PlatformToken, User
from tenants.scoping import scope_for
from tenants.services.tokens import token_issue

pytestmark = pytest.mark.usefixtures("store")


def op(operator):
    scope = scope_for(operator.account)
    assert scope is not None
    return OperatorPrincipal(operator.account, scope)


def approved(request, admin, capture):
    with capture() as queued:
        request = forget_request_approve(request=request, by=op(admin))
    assert len(queued) == 1  # the job is queued after the commit, not before
    return request


def run(request):
    """Run the job in-process (what the Celery task does) and return the request."""
    done = forget_request_execute(request_id=request.pk)
    assert done is not None
    return done


def remaining(user, ids) -> list[str]:
    return [d.id for d in backend().get_many(user_read_scope(user), list(ids))]


def text_anywhere(texts: list[str]) -> list[str]:
    """Every stored row that could hold text: audit events, requests, progress rows."""
    dumps = [json.dumps(list(AuditEvent.objects.values()), default=str)]
    dumps.append(json.dumps(list(ForgetRequest.objects.values()), default=str))
    dumps.append(json.dumps(list(ErasureProgress.objects.values()), default=str))
    dumps.append(json.dumps(list(ErasedPage.objects.values()), default=str))
    dumps.append(json.dumps(list(LedgerEntry.objects.values()), default=str))
    return [t for t in texts if any(t in d for d in dumps)]


# --- who may open, approve, reject, retry ------------------------------------------------------
def test_a_user_token_opens_a_request_for_its_own_user_only(alice, bob):
    token = token_issue(tenant=alice.tenant, user=alice, name="alice bot").token

    request = forget_request_open(
        reason="the subject asked", ticket="DPO-1", user=alice, scope="user", by=token
    )

    assert request.status == "pending" and request.requested_by_type == "token"
    with pytest.raises(NotFound):
        forget_request_open(
            reason="the subject asked", ticket="DPO-1", user=bob, scope="user", by=token
        )


def test_nobody_opens_a_request_for_another_tenants_user(acme, charlie, acme_admin, acme_auditor):
    tenant_token = token_issue(tenant=acme, name="acme fleet").token

    with pytest.raises(NotFound):
        forget_request_open(
            reason="the subject asked", ticket="DPO-1", user=charlie, scope="user", by=tenant_token
        )
    with pytest.raises(NotFound):
        forget_request_open(
            reason="the subject asked",
            ticket="DPO-1",
            user=charlie,
            scope="user",
            by=op(acme_admin),
        )
    assert not ForgetRequest.objects.exists()


def test_auditors_and_revoked_tokens_open_nothing(alice, acme_auditor):
    token = token_issue(tenant=alice.tenant, name="fleet").token
    PlatformToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now())
    token.refresh_from_db()

    with pytest.raises(PermissionDenied):
        forget_request_open(
            reason="the subject asked",
            ticket="DPO-1",
            user=alice,
            scope="user",
            by=op(acme_auditor),
        )
    with pytest.raises(NotFound):
        forget_request_open(
            reason="the subject asked", ticket="DPO-1", user=alice, scope="user", by=token
        )
    assert not ForgetRequest.objects.exists()


@pytest.mark.parametrize(
    "bad",
    [
        {"scope": "everything"},
        {"scope": "ids", "memory_ids": []},
        {"scope": "ids", "memory_ids": ["x" * 129]},
        {"scope": "query", "query": "   "},
        {"scope": "query", "query": "q" * 501},
        {"scope": "ids", "memory_ids": ["a"], "delete_user_record": True},
    ],
)
def test_bad_input_is_refused_and_writes_nothing(alice, acme_admin, bad):
    with pytest.raises(ValidationError):
        forget_request_open(
            reason="the subject asked", ticket="DPO-1", user=alice, by=op(acme_admin), **bad
        )

    assert not ForgetRequest.objects.exists()
    assert not AuditEvent.objects.filter(action__startswith="forget_request").exists()


def test_only_admins_of_the_tenant_decide(
    alice,
    acme_admin,
    acme_auditor,
    globex_admin,
    platform_admin,
    django_capture_on_commit_callbacks,
):
    token = token_issue(tenant=alice.tenant, name="fleet").token
    request = forget_request_open(
        reason="the subject asked", ticket="DPO-1", user=alice, scope="user", by=token
    )

    with pytest.raises(PermissionDenied):
        forget_request_approve(request=request, by=op(acme_auditor))
    with pytest.raises(PermissionDenied):
        forget_request_approve(request=request, by=token)
    with pytest.raises(NotFound):
        forget_request_approve(request=request, by=op(globex_admin))
    with pytest.raises(NotFound):
        forget_request_reject(request=request, by=op(globex_admin), reason="no")
    request.refresh_from_db()
    assert request.status == "pending"

    approved(request, platform_admin, django_capture_on_commit_callbacks)
    request.refresh_from_db()
    assert request.status == "approved" and request.approver_label == "root-op"
    with pytest.raises(Conflict):
        forget_request_approve(request=request, by=op(acme_admin))


def test_a_rejection_needs_a_reason_and_wipes_the_query(alice, acme_admin):
    request = forget_request_open(
        reason="the subject asked",
        ticket="DPO-1",
        user=alice,
        scope="query",
        query="my home address",
        by=op(acme_admin),
    )

    with pytest.raises(ValidationError):
        forget_request_reject(request=request, by=op(acme_admin), reason=" ")
    forget_request_reject(request=request, by=op(acme_admin), reason="duplicate of #1")

    request.refresh_from_db()
    assert (request.status, request.query, request.reason) == ("rejected", "", "duplicate of #1")
    assert text_anywhere(["my home address"]) == []


def test_each_service_leaves_one_audit_event_without_text(
    alice, acme_admin, django_capture_on_commit_callbacks
):
    def one(action, run):
        before = AuditEvent.objects.count()
        result = run()
        assert list(AuditEvent.objects.values_list("action", flat=True)[:1]) == [action]
        assert AuditEvent.objects.count() == before + 1
        return result

    by = op(acme_admin)
    first = one(
        "forget_request.open",
        lambda: forget_request_open(
            reason="the subject asked",
            ticket="DPO-1",
            user=alice,
            scope="query",
            query="secret words",
            by=by,
        ),
    )
    with django_capture_on_commit_callbacks():
        one("forget_request.approve", lambda: forget_request_approve(request=first, by=by))
    second = forget_request_open(
        reason="the subject asked", ticket="DPO-1", user=alice, scope="ids", memory_ids=["a"], by=by
    )
    one("forget_request.reject", lambda: forget_request_reject(request=second, by=by, reason="x"))
    ForgetRequest.objects.filter(pk=first.pk).update(status="failed")
    with django_capture_on_commit_callbacks():
        one("forget_request.retry", lambda: forget_request_retry(request=first, by=by))
    assert "secret words" not in json.dumps(list(AuditEvent.objects.values()), default=str)


# --- the job -------------------------------------------------------------------------------------
def test_erasing_listed_ids_takes_their_supporting_episodes_and_nothing_else(
    alice, bob, acme_admin, django_capture_on_commit_callbacks, monkeypatch
):
    from erasure.services import preview

    episode = memory_turn_record(user=alice, text="I moved to 12 Rue Lepic").episode
    other_episode = memory_turn_record(user=alice, text="The weather is fine").episode
    fact = memory_write(
        user=alice,
        text="Alice lives at 12 Rue Lepic",
        memory_type="semantic",
        supporting_episode_ids=[episode.id],
    )
    bobs = memory_write(user=bob, text="Bob lives at 3 Elm St", memory_type="semantic")
    request = forget_request_open(
        reason="the subject asked",
        ticket="DPO-1",
        user=alice,
        scope="ids",
        memory_ids=[fact.id, bobs.id, "f" * 32],
        include_supporting_episodes=True,
        by=op(acme_admin),
    )
    # Listed ids are read by id (with the episodes they name), never by a scan of the user.
    monkeypatch.setattr(preview, "memory_personal_all", lambda **_: pytest.fail("a full scan"))
    assert preview.forget_request_dry_run(request=request).ids == [fact.id, episode.id]
    approved(request, acme_admin, django_capture_on_commit_callbacks)
    monkeypatch.undo()

    done = run(request)

    assert done is not None and done.status == "done" and done.verified is True
    assert remaining(alice, [fact.id, episode.id, other_episode.id]) == [other_episode.id]
    assert remaining(bob, [bobs.id]) == [bobs.id]
    receipt = done.receipt
    assert receipt["user_external_id"] == "alice"  # named as the operator knows the user
    assert receipt["indices"]["semantic"]["ids"] == [fact.id]
    assert receipt["indices"]["episodic"]["ids"] == [episode.id]
    assert receipt["total_deleted"] == 2
    assert sorted(receipt["not_found_ids"]) == sorted([bobs.id, "f" * 32])
    assert text_anywhere(["Rue Lepic", "12 Rue"]) == []


def test_erasing_by_query_resolves_ids_once_and_wipes_the_query(
    alice, acme_admin, django_capture_on_commit_callbacks
):
    hits = [
        memory_write(
            user=alice, text=f"Note {n}: the Lumio  HUB serial is X{n}", memory_type="semantic"
        )
        for n in range(3)
    ]
    keep = memory_write(user=alice, text="The router is fine", memory_type="semantic")
    request = forget_request_open(
        reason="the subject asked",
        ticket="DPO-1",
        user=alice,
        scope="query",
        query="lumio hub",
        by=op(acme_admin),
    )
    approved(request, acme_admin, django_capture_on_commit_callbacks)

    done = run(request)

    assert done.status == "done" and done.query == "" and done.targets_resolved
    assert sorted(done.memory_ids) == sorted(h.id for h in hits)
    assert remaining(alice, [*(h.id for h in hits), keep.id]) == [keep.id]
    assert done.receipt["indices"]["semantic"]["deleted"] == 3
    assert text_anywhere(["lumio hub", "Lumio", "serial is"]) == []


def test_an_erasure_drops_the_session_cursor_that_points_at_erased_turns(
    alice, bob, acme_admin, django_capture_on_commit_callbacks
):
    """A cursor names the session of the user's newest turn and that turn's time: after the
    turn is erased it would still say when the user last spoke, and lead the next text-only
    turn into the erased session. Another user's cursor stays."""
    memory_turn_record(user=alice, text="My new door code is 2468", k=1)
    last = memory_turn_record(user=alice, text="Remind me of the door code tomorrow", k=1)
    memory_turn_record(user=bob, text="I moved to Leeds", k=1)
    erased_session = last.episode.session_id
    assert SessionCursor.objects.filter(user=alice).count() == 1
    request = forget_request_open(
        reason="the subject asked",
        ticket="DPO-7",
        user=alice,
        scope="query",
        query="door code",
        by=op(acme_admin),
    )
    approved(request, acme_admin, django_capture_on_commit_callbacks)

    done = run(request)

    assert done.receipt["indices"]["episodic"]["deleted"] == 2
    assert done.receipt["other_records_deleted"] == {"memory.session_cursors": 1}
    assert not SessionCursor.objects.filter(user=alice).exists()
    assert SessionCursor.objects.filter(user=bob).count() == 1
    after = memory_turn_record(user=alice, text="Good morning", k=1).episode
    assert after.session_inferred and after.session_id not in (None, erased_session)


def test_erasing_a_user_purges_stored_responses_and_may_delete_the_user(
    api_client_post, alice, bob, acme_admin, django_capture_on_commit_callbacks
):
    secret = api_client_post(alice, "Alice's locker code is 4711")
    bob_secret = api_client_post(bob, "Bob's locker code is 1234")
    assert LedgerEntry.objects.count() == 2
    for n in range(7):
        memory_write(
            user=alice,
            text=f"fact {n} about alice",
            memory_type="procedural" if n % 2 else "semantic",
        )
    request = forget_request_open(
        reason="the subject asked",
        ticket="DPO-1",
        user=alice,
        scope="user",
        delete_user_record=True,
        by=op(acme_admin),
    )
    approved(request, acme_admin, django_capture_on_commit_callbacks)

    done = run(request)

    assert done.status == "done"
    counts = {kind: v["deleted"] for kind, v in done.receipt["indices"].items()}
    # "entity": the knowledge graph's searchable documents (memory.services.documents).
    assert counts == {"episodic": 0, "semantic": 5, "procedural": 3, "entity": 0}
    assert done.receipt["idempotency_records_deleted"] == 1
    assert done.receipt["user_record_deleted"] is True
    assert not User.objects.filter(pk=alice.pk).exists()
    assert not PlatformToken.objects.filter(user_id=alice.pk).exists()
    done.refresh_from_db()
    assert done.user is None and done.user_ref == alice.memory_id
    assert LedgerEntry.objects.count() == 1  # Bob's stays
    assert text_anywhere([secret, "about alice"]) == []
    assert text_anywhere([bob_secret]) == [bob_secret]
    assert backend().count(user_read_scope(bob))["semantic"] == 1


def test_a_failed_job_is_retried_and_resumes_with_exact_counts(
    alice, acme_admin, settings, monkeypatch, django_capture_on_commit_callbacks
):
    settings.ATLAS_ERASURE_PAGE_SIZE = 2
    store = backend()
    docs = [memory_write(user=alice, text=f"fact {n}", memory_type="semantic") for n in range(7)]
    request = forget_request_open(
        reason="the subject asked", ticket="DPO-1", user=alice, scope="user", by=op(acme_admin)
    )
    approved(request, acme_admin, django_capture_on_commit_callbacks)
    real_delete, calls = store.delete_ids, []

    def flaky(**kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise EngineError("the store went away")
        return real_delete(**kwargs)

    monkeypatch.setattr(store, "delete_ids", flaky)
    failed = run(request)

    assert failed.status == "failed" and "memory store failed" in failed.reason
    assert "went away" not in failed.reason  # the store's own text stays in the log
    progress = ErasureProgress.objects.get(request=request, kind="semantic")
    assert progress.deleted == 4 and len(progress.pending_ids) == 2
    with django_capture_on_commit_callbacks() as queued:
        forget_request_retry(request=failed, by=op(acme_admin))
    assert len(queued) == 1
    done = run(request)

    assert done.status == "done" and done.retry_count == 1
    assert sorted(done.receipt["indices"]["semantic"]["ids"]) == sorted(d.id for d in docs)
    assert done.receipt["indices"]["semantic"]["deleted"] == 7


def test_a_job_killed_after_journaling_a_page_resumes_without_double_counting(
    alice, acme_admin, settings, monkeypatch, django_capture_on_commit_callbacks
):
    settings.ATLAS_ERASURE_PAGE_SIZE = 3
    store = backend()
    docs = [memory_write(user=alice, text=f"fact {n}", memory_type="semantic") for n in range(8)]
    request = forget_request_open(
        reason="the subject asked", ticket="DPO-1", user=alice, scope="user", by=op(acme_admin)
    )
    approved(request, acme_admin, django_capture_on_commit_callbacks)
    real_delete, calls = store.delete_ids, []

    class Killed(BaseException):
        """Stands in for SIGKILL: nothing after it runs, not even the failure handler."""

    def dies_after_deleting(**kwargs):
        calls.append(1)
        deleted = real_delete(**kwargs)
        if len(calls) == 2:
            raise Killed  # the page is gone from the store but not yet counted
        return deleted

    monkeypatch.setattr(store, "delete_ids", dies_after_deleting)
    with pytest.raises(Killed):
        forget_request_execute(request_id=request.pk)
    monkeypatch.setattr(store, "delete_ids", real_delete)
    stuck = ForgetRequest.objects.get(pk=request.pk)
    assert stuck.status == "running"
    assert forget_request_execute(request_id=request.pk) is None  # lease still live
    ForgetRequest.objects.filter(pk=request.pk).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    with django_capture_on_commit_callbacks() as queued:
        assert forget_request_resume_stalled() == [request.pk]
    assert len(queued) == 1

    done = run(request)

    semantic = done.receipt["indices"]["semantic"]
    assert semantic["deleted"] == 8 and sorted(semantic["ids"]) == sorted(d.id for d in docs)
    assert len(semantic["ids"]) == len(set(semantic["ids"]))


def test_resume_stalled_leaves_live_and_finished_requests_alone(alice, acme_admin):
    by = op(acme_admin)
    live = forget_request_open(
        reason="the subject asked", ticket="DPO-1", user=alice, scope="user", by=by
    )
    ForgetRequest.objects.filter(pk=live.pk).update(
        status="running", lease_expires_at=timezone.now() + timedelta(minutes=1)
    )
    finished = forget_request_open(
        reason="the subject asked", ticket="DPO-1", user=alice, scope="user", by=by
    )
    ForgetRequest.objects.filter(pk=finished.pk).update(
        status="done", lease_expires_at=timezone.now() - timedelta(minutes=1)
    )
    lost = forget_request_open(
        reason="the subject asked", ticket="DPO-1", user=alice, scope="user", by=by
    )
    ForgetRequest.objects.filter(pk=lost.pk).update(
        status="approved", lease_expires_at=timezone.now() - timedelta(minutes=1)
    )

    assert forget_request_resume_stalled() == [lost.pk]


def test_a_request_that_is_not_approved_never_runs(alice, acme_admin):
    request = forget_request_open(
        reason="the subject asked", ticket="DPO-1", user=alice, scope="user", by=op(acme_admin)
    )
    memory_write(user=alice, text="stays", memory_type="semantic")

    assert forget_request_execute(request_id=request.pk) is None
    assert backend().count(user_read_scope(alice))["semantic"] == 1


def test_an_approval_of_a_stale_preview_is_refused_and_approving_fixes_the_targets(
    alice, acme_admin, django_capture_on_commit_callbacks
):
    from erasure.services.preview import forget_request_dry_run

    first = memory_write(user=alice, text="Alice's old phone is 0123", memory_type="semantic")
    request = forget_request_open(
        reason="asked", ticket="T-9", user=alice, scope="query", query="PHONE", by=op(acme_admin)
    )
    seen = forget_request_dry_run(request=request)
    second = memory_write(user=alice, text="Alice's new phone is 0456", memory_type="semantic")

    with pytest.raises(Conflict) as stale:
        forget_request_approve(request=request, by=op(acme_admin), seen=seen.fingerprint)
    request.refresh_from_db()
    assert stale.value.code == "preview_changed" and request.status == "pending"

    fresh = forget_request_dry_run(request=request)
    with django_capture_on_commit_callbacks():
        forget_request_approve(request=request, by=op(acme_admin), seen=fresh.fingerprint)
    later = memory_write(user=alice, text="Alice's work phone is 0789", memory_type="semantic")
    done = run(request)

    # Exactly what was approved: the memory written after the approval stays.
    assert sorted(done.memory_ids) == sorted([first.id, second.id])
    assert done.receipt["previewed_at_approval"]["total"] == 2
    assert done.receipt["previewed_at_open"]["total"] == 1
    assert done.receipt["total_deleted"] == 2 and done.query == ""
    assert backend().get(user_read_scope(alice), later.id) is not None
    assert "phone" not in json.dumps(done.receipt).lower()
