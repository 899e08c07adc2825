"""The platform overview: a row per tenant with its memory count, recall volume, open erasures
and (with a cluster) key health; platform admins only; one query per column, not per tenant."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from memory.models import RecallStat
from memory.services import bookkeeping
from memory.services.writes import memory_write
from tenants.models import ScopedKey, Tenant, User

pytestmark = pytest.mark.django_db
OVERVIEW = "admin:overview"


@pytest.fixture
def store(settings: Any, tmp_path: Any):
    settings.ATLAS_MEMORY_BACKEND = "embedded"
    settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")
    yield
    bookkeeping.drain()


def row(page: str, tenant: Tenant) -> list[str]:
    """The cells of the tenant's row, tags stripped."""
    import re

    html = page[page.index(f'id="tenant-{tenant.pk}"') :]
    html = html[: html.index("</tr>")]
    cells = re.findall(r"<td[^>]*>(.*?)</td>", html, flags=re.S)
    return [re.sub(r"<[^>]+>", "", cell).strip() for cell in cells]


def header(page: str) -> list[str]:
    import re

    table = page[page.index('id="platform-overview"') :]
    return re.findall(r"<th[^>]*>([^<]*)</th>", table[: table.index("</thead>")])


def test_each_tenant_has_its_memories_recalls_and_open_erasures(
    store, no_cluster, acme, globex, alice, bob, acme_admin, platform_client
):
    from erasure.services.requests import OperatorPrincipal, forget_request_open
    from tenants.scoping import scope_for

    memory_write(user=alice, text="Alice likes tea", memory_type="semantic")
    memory_write(user=bob, text="Bob likes coffee", memory_type="semantic")
    now = timezone.now().replace(minute=0, second=0, microsecond=0)
    RecallStat.objects.create(tenant=acme, hour=now, le_ms=50, count=3)
    RecallStat.objects.create(tenant=acme, hour=now - timedelta(days=3), le_ms=50, count=4)
    RecallStat.objects.create(tenant=acme, hour=now - timedelta(days=9), le_ms=50, count=100)
    scope = scope_for(acme_admin.account)
    assert scope is not None
    forget_request_open(
        reason="the subject asked",
        ticket="DPO-1",
        user=alice,
        scope="user",
        by=OperatorPrincipal(acme_admin.account, scope),
    )

    page = platform_client.get(reverse(OVERVIEW)).content.decode()

    assert header(page) == [
        "tenant",
        "status",
        "memories",
        "recalls 24 h / 7 d",
        "open erasures",
    ]  # embedded, no cluster: no key health column
    assert row(page, acme)[0] == acme.name and row(page, acme)[2:] == ["2", "3 / 7", "1"]
    assert row(page, globex)[2:] == ["0", "0 / 0", "0"]
    assert reverse("admin:tenants_tenant_dashboard", args=[acme.pk]) in page


def test_the_overview_reads_each_column_once_whatever_the_number_of_tenants(
    store, no_cluster, acme, platform_client, django_assert_max_num_queries
):
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert platform_client.get(reverse(OVERVIEW)).status_code == 200
        return len(captured)

    few = queries()
    for n in range(8):
        tenant = Tenant.objects.create(name=f"Tenant {n}", slug=f"tenant-{n}")
        RecallStat.objects.create(tenant=tenant, hour=timezone.now(), le_ms=50, count=1)
    with django_assert_max_num_queries(few):
        page = platform_client.get(reverse(OVERVIEW)).content.decode()
    assert page.count('class="tenant-row"') == Tenant.objects.count() == 9


def test_key_health_flags_overdue_and_missing_keys_with_a_cluster(
    es, settings, acme, globex, platform_client
):
    from tenants.services.scoped_keys import scoped_key_provision

    settings.ATLAS_SCOPED_KEY_TTL_DAYS = 7.0
    settings.ATLAS_SCOPED_KEY_RENEW_DAYS = 2.0
    acme.isolation_mode = "dls"  # its reads need keys: a missing one is a fault
    acme.save()
    fresh, old = (User.objects.create(tenant=acme, external_id=n) for n in ("fresh", "oldkey"))
    User.objects.create(tenant=acme, external_id="nokey")
    for user in (fresh, old):
        scoped_key_provision(user=user)
    ScopedKey.objects.filter(user=old).update(created_at=timezone.now() - timedelta(days=6))
    carol = User.objects.create(tenant=globex, external_id="carol")
    memory_write(user=carol, text="Carol likes cocoa", memory_type="semantic")
    memory_write(user=carol, text="Carol works late", memory_type="semantic")

    page = platform_client.get(reverse(OVERVIEW)).content.decode()

    assert "key health" in header(page)
    assert "1 overdue, 1 missing" in row(page, acme)  # "fresh" is fine
    assert row(page, globex)[2] == "2"  # counted in Elasticsearch, every index of the tenant
    assert "ok (0 keys)" in row(page, globex)  # a filter tenant's missing key is no fault


def test_only_platform_admins_reach_the_overview_and_see_its_link(
    store, acme, platform_client, acme_client, auditor_client
):
    for client in (acme_client, auditor_client):
        assert client.get(reverse(OVERVIEW)).status_code == 403
    assert platform_client.post(reverse(OVERVIEW)).status_code == 405
    index = platform_client.get(reverse("admin:index")).content.decode()
    assert reverse(OVERVIEW) in index and "Platform overview" in index
    listing = acme_client.get(reverse("admin:tenants_user_changelist")).content.decode()
    assert reverse(OVERVIEW) not in listing


def test_more_than_five_hundred_tenants_are_paged_each_on_exactly_one_page(
    store, no_cluster, acme, platform_client, django_assert_max_num_queries
):
    from tenants.admin.site import OVERVIEW_PAGE_SIZE

    # 530 more tenants, two of them named like Acme (a stable order keeps each on one page).
    Tenant.objects.bulk_create(
        [Tenant(name=f"Tenant {n:04d}", slug=f"tenant-{n:04d}") for n in range(528)]
        + [Tenant(name="Acme", slug=f"acme-{n}") for n in range(2)]
    )
    total = Tenant.objects.count()
    assert total == 531 and total > OVERVIEW_PAGE_SIZE
    pages = -(-total // OVERVIEW_PAGE_SIZE)

    def ids(page: str) -> list[str]:
        import re

        return re.findall(r'class="tenant-row" id="tenant-(\d+)"', page)

    first = platform_client.get(reverse(OVERVIEW)).content.decode()
    assert f"Tenants 1 to {OVERVIEW_PAGE_SIZE} of {total} (page 1 of {pages})" in first
    assert 'id="overview-previous"' not in first and "?page=2" in first
    with CaptureQueriesContext(connection) as captured:
        platform_client.get(reverse(OVERVIEW), {"page": 2})
    seen: list[str] = []
    for number in range(1, pages + 1):
        with django_assert_max_num_queries(len(captured)):  # the same reads on every page
            page = platform_client.get(reverse(OVERVIEW), {"page": number}).content.decode()
        rows = OVERVIEW_PAGE_SIZE if number < pages else total - (pages - 1) * OVERVIEW_PAGE_SIZE
        assert len(ids(page)) == rows
        seen += ids(page)
    assert sorted(seen) == sorted(str(pk) for pk in Tenant.objects.values_list("pk", flat=True))
    assert len(set(seen)) == total  # every tenant exactly once
    last = platform_client.get(reverse(OVERVIEW), {"page": pages}).content.decode()
    assert 'id="overview-next"' not in last and f"page {pages} of {pages}" in last

    # A page number that is no page answers the nearest page, never an error.
    for bad in ("0", "-3", "999", "abc", "1\x00"):
        response = platform_client.get(reverse(OVERVIEW), {"page": bad})
        assert response.status_code == 200, bad
        assert len(ids(response.content.decode())) > 0
