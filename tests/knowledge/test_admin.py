"""The knowledge graph's admin pages: tenant-scoped lists and entity pages with their
revisions and edges; another tenant's entity is a 404; nothing can be changed."""

from __future__ import annotations

import pytest
from django.urls import reverse

from knowledge.models import Entity, ReconcileRun
from knowledge.services.reconcile import reconcile_plan
from tests.knowledge.conftest import fm, project_of, writer

MACHINE = "laptop"

pytestmark = [pytest.mark.django_db, pytest.mark.services]


@pytest.fixture
def world(store, alice, charlie, acme_admin, acme_auditor, globex_admin):
    for user, tag in ((alice, "acmeside"), (charlie, "globexside")):
        project = project_of(user)
        note = writer(user, project, MACHINE)
        note("docs/a.md", fm(id=f"{tag}-a", blocked_by=f"{tag}-b", body=f"{tag} body\n"))
        note("docs/a.md", fm(id=f"{tag}-a", body=f"{tag} body two\n"), base=1)
        note("docs/b.md", fm(id=f"{tag}-b"))
        reconcile_plan(
            machine_key=MACHINE,
            user=user,
            project_key=project.key,
            roots=["docs"],
            files=[{"path": "docs/a.md"}, {"path": "docs/b.md"}],
        )


@pytest.mark.parametrize("model", ["entity", "reconcilerun"])
def test_a_tenant_admin_sees_only_their_tenants_rows(world, acme_client, auditor_client, model):
    for client in (acme_client, auditor_client):
        page = client.get(reverse(f"admin:knowledge_{model}_changelist"))
        assert page.status_code == 200
        text = page.content.decode()
        assert "globexside" not in text and "charlie" not in text
        if model == "entity":
            assert "acmeside-a" in text


def test_an_entity_page_shows_revisions_and_edges_and_another_tenants_is_404(world, acme_client):
    mine = Entity.objects.get(key="acmeside-a")
    theirs = Entity.objects.get(key="globexside-a")
    page = acme_client.get(reverse("admin:knowledge_entity_change", args=[mine.pk]))
    text = page.content.decode()
    assert page.status_code == 200 and "acmeside body two" in text
    assert "created" in text and "updated" in text and "acmeside-b" in text
    other = acme_client.get(reverse("admin:knowledge_entity_change", args=[theirs.pk]))
    assert other.status_code in (302, 404)
    assert acme_client.post(
        reverse("admin:knowledge_entity_change", args=[mine.pk]), {"title": "x"}
    ).status_code in (403, 302)
    assert Entity.objects.get(pk=mine.pk).title != "x"
    run = ReconcileRun.objects.get(user__external_id="charlie")
    assert acme_client.get(
        reverse("admin:knowledge_reconcilerun_change", args=[run.pk])
    ).status_code in (302, 404)


def test_the_platform_admin_sees_both(world, platform_client):
    text = platform_client.get(reverse("admin:knowledge_entity_changelist")).content.decode()
    assert "acmeside-a" in text and "globexside-a" in text
