"""An erasure of a whole user reaches the knowledge graph: the job erases the user's
searchable entity documents from the store (the ``entity`` memory type) and the receiver of
``tenants.signals.user_data_erasing`` takes every entity, revision, edge and reconcile run.
Another user's graph stays. Through the erasure job itself, on each backend."""

from __future__ import annotations

import pytest

from erasure.models import ErasureProgress, ForgetRequest
from knowledge.models import Edge, Entity, ReconcileRun, Revision
from knowledge.selectors import graph_search
from knowledge.services.reconcile import reconcile_plan
from memory.services.documents import searchable_count
from tenants.models import Operator
from tenants.services.users import operator_create
from tests.agents.test_erasure import erase
from tests.knowledge.conftest import fm, project_of, writer

MACHINE = "laptop"

pytestmark = pytest.mark.services


def graph(user):
    project = project_of(user)
    note = writer(user, project, MACHINE)
    note("docs/a.md", fm(id="a", blocked_by="b", body="Narwhal tusk study.\n"))
    note("docs/b.md", fm(id="b", body="Tusk samples.\n"))
    reconcile_plan(
        machine_key=MACHINE,
        user=user,
        project_key=project.key,
        roots=["docs"],
        files=[{"path": "docs/a.md"}, {"path": "docs/b.md"}],
    )


def test_erasing_a_whole_user_takes_their_graph_and_its_searchable_documents(
    people, django_capture_on_commit_callbacks
):
    graph(people.alice)
    graph(people.bob)
    admin = operator_create(
        username="acme-admin",
        password="x-" * 8,
        role=Operator.Role.TENANT_ADMIN,
        tenant=people.acme,
    )
    assert searchable_count(user=people.alice) == 2
    done = erase(people.alice, admin, django_capture_on_commit_callbacks, scope="user")
    assert done.status == ForgetRequest.Status.DONE and done.receipt is not None
    assert ErasureProgress.objects.get(request=done, kind="entity").deleted == 2
    others = done.receipt["other_records_deleted"]
    assert others["knowledge.entities"] == 2 and others["knowledge.reconcile_runs"] == 1
    assert not Entity.objects.filter(user_id=people.alice.pk).exists()
    assert not ReconcileRun.objects.filter(user_id=people.alice.pk).exists()
    assert Revision.objects.filter(entity__user=people.bob).count() == 2
    assert Edge.objects.filter(source__user=people.bob).count() == 1
    assert graph_search(user=people.bob, query="narwhal tusk")[0].entity.key == "a"
