"""The real worker path: a Celery worker process consuming from Redis erases thousands of
memories on Elasticsearch, survives a SIGKILL midway, and leaves no text anywhere."""

from __future__ import annotations

import json
import random
import time
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from django.utils import timezone
from elasticsearch import Elasticsearch

from atlas_platform.models import LedgerEntry
from erasure.models import ErasedPage, ErasureProgress, ForgetRequest
from erasure.services import (
    forget_request_approve,
    forget_request_open,
    forget_request_resume_stalled,
)
from memory.engine.types import MemoryDoc
from memory.services.common import backend
from tenants.models import AuditEvent, Tenant, User
from tests.erasure.test_services import op

pytestmark = pytest.mark.django_db(transaction=True)

PER_TYPE = 1000
TYPES = ("episodic", "semantic", "procedural")
DIMS = 384


def doc(tenant: Tenant, user: User | None, memory_type: str, text: str) -> MemoryDoc:
    now = datetime.now(UTC)
    rng = random.Random(text)  # noqa: S311 - test vectors
    return MemoryDoc(
        id=uuid.uuid4().hex,
        tenant_id=tenant.memory_id,
        user_id=user.memory_id if user else None,
        memory_type=memory_type,  # type: ignore[arg-type]
        text=text,
        created_at=now,
        timestamp=now,
        embedding=[rng.uniform(-1, 1) for _ in range(DIMS)],
        name=f"playbook {text}" if memory_type == "procedural" else None,
    )


def cluster(settings) -> Elasticsearch:
    return Elasticsearch(
        settings.ATLAS_ES_URL,
        basic_auth=(settings.ATLAS_ES_USERNAME, settings.ATLAS_ES_PASSWORD),
        request_timeout=30,
    )


def users_documents(es: Elasticsearch, settings, user: User, kind: str) -> int:
    """How many of ``user``'s documents of memory type ``kind`` the cluster holds: the memory
    types share one index."""
    filters: list[dict[str, Any]] = [
        {"term": {"user_id": user.memory_id}},
        {"term": {"memory_type": kind}},
    ]
    index = f"{settings.ATLAS_ES_INDEX_PREFIX}-t-{user.tenant.memory_id}"
    es.indices.refresh(index=index)
    return int(es.count(index=index, query={"bool": {"filter": filters}})["count"])


def wait_for(condition, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def deleted_so_far(request: ForgetRequest) -> int:
    return sum(ErasureProgress.objects.filter(request=request).values_list("deleted", flat=True))


def test_a_killed_worker_resumes_and_erases_thousands_of_memories_exactly(
    erasure_worker, settings, api_client_post, acme_admin
):
    acme = acme_admin.tenant
    alice = User.objects.create(tenant=acme, external_id="alice")
    bob = User.objects.create(tenant=acme, external_id="bob")
    store = backend()
    mine = [
        doc(acme, alice, kind, f"alice-{kind}-{n}-{uuid.uuid4().hex[:12]} private detail")
        for kind in TYPES
        for n in range(PER_TYPE)
    ]
    kept = [doc(acme, bob, "semantic", f"bob fact {n}") for n in range(20)]
    kept.append(doc(acme, None, "catalog", "Acme opening hours"))
    for start in range(0, len(mine), 500):
        store.write(mine[start : start + 500])
    store.write(kept)
    es = cluster(settings)
    quoted = api_client_post(alice, "Alice's locker code is 4711")  # a stored API response
    texts = [d.text for d in mine] + [quoted]

    request = forget_request_open(
        reason="the subject asked", ticket="DPO-1", user=alice, scope="user", by=op(acme_admin)
    )
    forget_request_approve(request=request, by=op(acme_admin))  # queued to Redis on commit
    erasure_worker.start()
    wait_for(lambda: deleted_so_far(request) >= 100, 120, "some pages to be erased")
    erasure_worker.kill()

    at_kill = deleted_so_far(request)
    stuck = ForgetRequest.objects.get(pk=request.pk)
    assert stuck.status == "running" and 100 <= at_kill < len(mine) + 1
    lease = stuck.lease_expires_at
    assert lease is not None
    wait_for(lambda: timezone.now() > lease, 30, "the lease to expire")
    assert forget_request_resume_stalled() == [request.pk]
    erasure_worker.start()
    done = wait_for(
        lambda: ForgetRequest.objects.filter(pk=request.pk, status__in=["done", "failed"]).first(),
        300,
        "the erasure to finish",
    )

    assert done.status == "done", done.reason
    indices = done.receipt["indices"]
    assert {k: v["deleted"] for k, v in indices.items()} == {
        "episodic": PER_TYPE,
        "semantic": PER_TYPE + 1,  # the fact written through the API
        "procedural": PER_TYPE,
        "entity": 0,  # the knowledge graph's documents go with the whole user too
    }
    erased = [i for v in indices.values() for i in v["ids"]]
    assert len(erased) == len(set(erased))  # nothing counted twice
    assert set(erased) >= {d.id for d in mine}
    assert done.receipt["total_deleted"] == len(erased) == len(mine) + 1
    assert done.verified is True and all(v["remaining"] == 0 for v in indices.values())
    for kind in TYPES:
        assert users_documents(es, settings, alice, kind) == 0
    assert users_documents(es, settings, bob, "semantic") == 20
    catalog = {"term": {"memory_type": "catalog"}}
    index = f"{settings.ATLAS_ES_INDEX_PREFIX}-t-{alice.tenant.memory_id}"
    assert es.count(index=index, query=catalog)["count"] >= 1
    assert done.receipt["idempotency_records_deleted"] == 1
    assert erasure_worker.starts == 2

    rows = json.dumps(
        [
            list(AuditEvent.objects.values()),
            list(ForgetRequest.objects.values()),
            list(ErasureProgress.objects.values()),
            list(ErasedPage.objects.values()),
            list(LedgerEntry.objects.values()),
        ],
        default=str,
    )
    logs = erasure_worker.output()
    assert [t for t in texts if t in rows or t in logs] == []
    assert "private detail" not in rows and "locker code" not in rows
