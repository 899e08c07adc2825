"""Who looked at a person's data (issue 34, items 1 and 9), in Chromium at 1400x900, light and
dark: a tenant admin pages through Alice's memories in the inspector (a burst of pages), opens a
memory's history and recalls as Alice; a tenant token exports her over REST; an auditor is
refused a page. The auditor then finds exactly those reads in the audit trail, filtered by
subject and by kind, with times to the second and whole request ids, and the CSV of that view
holds the same rows. Bob's data, read in the same minutes, is not in Alice's view. No response
of any page is a 404 or a 5xx (the favicon included). Screenshots under
var/test-artifacts/browser/."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Any

import pytest

from memory.services.writes import memory_write
from tenants.models import AuditEvent
from tests.atlas_server.conftest import tenant_token
from tests.browser.test_first_hour import themed

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SECRET_QUERY = "where does Alice live now"
BURST = 25  # inspector pages in a burst: one audit event for all of them


@pytest.fixture(autouse=True)
def embedded(settings: Any, tmp_path: Any, no_cluster: None) -> None:
    settings.ATLAS_MEMORY_BACKEND = "embedded"
    settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")
    settings.ATLAS_AUDIT_READ_WINDOW_S = 300


def watch_responses(page: Any) -> list[tuple[int, str]]:
    """Every response the page gets that is a 404 or a 5xx (documents, scripts, icons)."""
    bad: list[tuple[int, str]] = []
    page.on(
        "response",
        lambda r: bad.append((r.status, r.url)) if r.status == 404 or r.status >= 500 else None,
    )
    return bad


def listed_actions(page: Any) -> list[str]:
    return [a.strip() for a in page.locator("#result_list td.field-action").all_inner_texts()]


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_every_look_at_a_persons_data_is_in_the_trail_filterable_by_subject(
    acme, alice, bob, acme_admin, acme_auditor, signed_in, shot, live_server, theme
):
    fact = memory_write(user=alice, text="Alice lives in Edinburgh", memory_type="semantic")
    memory_write(user=alice, text="Alice prefers tea", memory_type="semantic")
    memory_write(user=bob, text="Bob lives in Leeds", memory_type="semantic")
    admin = themed(signed_in(acme_admin), theme)
    bad = watch_responses(admin)

    # A burst of inspector pages: the list, filtered, paged, reloaded.
    admin.goto(f"/admin/tenants/user/{alice.pk}/memories/")
    assert fact.text in admin.inner_text("#memory-table")
    for n in range(BURST):
        admin.goto(f"/admin/tenants/user/{alice.pk}/memories/?type=semantic&n={n}")
    admin.wait_for_selector("#memory-table")
    shot(admin, f"inspector-{theme}")
    admin.goto(f"/admin/tenants/user/{alice.pk}/memories/{fact.id}/history/")
    assert fact.text in admin.inner_text("#content-main")

    # Recall as Alice: the hits with their legs, the query audited as its hash only.
    admin.goto(f"/admin/tenants/user/{alice.pk}/memories/search/")
    admin.fill("#recall-form input[name=q]", SECRET_QUERY)
    admin.click("#recall-form [type=submit]")
    admin.wait_for_selector("#recall-hits")
    hits = admin.locator("#recall-hits tr.recall-hit").evaluate_all(
        "rs => rs.map(r => r.dataset.id)"
    )
    assert fact.id in hits
    shot(admin, f"inspector-recall-{theme}")
    admin.goto(f"/admin/tenants/user/{bob.pk}/memories/")  # another person: its own event

    # A tenant token with the export right exports Alice (a file, with its name).
    token = tenant_token(acme, allow_export=True)
    exported = admin.request.get(
        f"{live_server.url}/api/v1/users/alice/export",
        headers={"Authorization": f"Bearer {token}"},
    )
    assert exported.status == 200
    assert 'filename="atlas-export-alice-' in exported.headers["content-disposition"]

    # The auditor is refused a page an auditor may not open: that is in the trail too.
    auditor = themed(signed_in(acme_auditor), theme)
    bad += watch_responses(auditor)
    refused = auditor.goto("/admin/tenants/tenant/add/")
    assert refused is not None and refused.status == 403
    bad[:] = [b for b in bad if not b[1].endswith("/admin/tenants/tenant/add/")]

    # The auditor's view of the trail: reads of a person's data, Alice's only.
    auditor.goto("/admin/tenants/auditevent/?kind=read")
    auditor.click(f"#changelist-filter a[href*='subject_user__id__exact={alice.pk}']")
    auditor.wait_for_url(re.compile(rf"subject_user__id__exact={alice.pk}"))
    actions = listed_actions(auditor)
    assert sorted(actions) == ["read.export", "read.history", "read.memories", "read.recall"]
    subjects = {
        s.strip() for s in auditor.locator("#result_list td.field-subject_user").all_inner_texts()
    }
    assert subjects == {str(alice)}
    actors = auditor.locator("#result_list td.field-actor_label").all_inner_texts()
    assert sorted(a.strip() for a in actors) == [
        "acme fleet",
        "acme-admin",
        "acme-admin",
        "acme-admin",
    ]
    assert SECRET_QUERY not in auditor.content()  # the recall's query is kept as its hash only

    # Times to the second; request ids whole (not clipped by their column), each a filter.
    for cell in auditor.locator("#result_list td.field-time").all_inner_texts():
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", cell.strip()), cell
    codes = auditor.locator("#result_list td.field-request_link code")
    assert codes.count() == 4
    results = auditor.locator("#changelist-form .results")
    width, room = results.evaluate("r => [r.scrollWidth, r.clientWidth]")
    assert width <= room + 1, (width, room)  # every column in view, no sideways scroll
    assert auditor.locator("#result_list th.column-tenant").count() == 0  # one tenant: no column
    for n in range(codes.count()):
        code = codes.nth(n)
        shown = code.evaluate("c => [c.scrollWidth, c.clientWidth, c.innerText]")
        assert shown[0] <= shown[1] + 1, shown  # nothing of the id hidden
        box = code.bounding_box()
        assert box is not None and box["x"] + box["width"] <= 1400
        request_id = shown[2].replace("\n", "")
        assert AuditEvent.objects.filter(request_id=request_id, subject_user=alice).exists()
    shot(auditor, f"audit-reads-of-alice-{theme}")

    # The CSV is exactly this view.
    with auditor.expect_download() as downloaded:
        auditor.click("#export-csv")
    rows = list(csv.DictReader(io.StringIO(Path(downloaded.value.path()).read_text())))
    assert sorted(r["action"] for r in rows) == sorted(actions)
    assert {r["subject_user"] for r in rows} == {"alice"}

    # Refusals are their own kind.
    auditor.goto("/admin/tenants/auditevent/?kind=refused")
    assert listed_actions(auditor) == ["refused.page"]
    assert "/admin/tenants/tenant/add/" in auditor.inner_text("#result_list")
    shot(auditor, f"audit-refusals-{theme}")

    # The burst of inspector pages was one event (actor, subject, what); Bob's read its own.
    memories = AuditEvent.objects.filter(action="read.memories")
    assert sorted(memories.values_list("subject_user__external_id", flat=True)) == ["alice", "bob"]
    favicon = auditor.request.get(f"{live_server.url}/favicon.ico")
    assert favicon.status == 200 and favicon.headers["content-type"].startswith("image/")
    assert bad == [], bad  # no 404 (favicon included) and no 5xx on any page
