"""Browser tests: Debian's headless Chromium driven by Playwright against a live Atlas.

Nothing here downloads a browser: Playwright launches ``/usr/bin/chromium`` (or
``ATLAS_CHROMIUM``), which ``deploy/services/browser.sh`` installs (``make test`` runs it). A
missing browser skips locally and fails under ``ATLAS_REQUIRE_SERVICES=1``, like any service.

Reusable pieces: ``signed_in(operator)`` (a page logged in as that operator), ``shot(page,
name)`` (a full-page screenshot under ``ATLAS_TEST_ARTIFACTS``, default var/test-artifacts/),
``dls_acme`` (Acme on the real cluster in isolation mode dls), ``seed_memories(user)`` and
``busy_week`` (every dashboard chart with data).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from django.utils import timezone

from consolidation.models import ConsolidationRun
from memory.models import RecallStat
from memory.services import bookkeeping
from memory.services.writes import (
    memory_turn_record,
    memory_write,
    procedure_outcome_record,
)
from tenants.models import Operator, Tenant, User
from tests.conftest import PASSWORD, service_missing
from tests.erasure.conftest import (  # noqa: F401 - a real worker (each backend)
    backend_worker,
    erasure_queue,
    erasure_worker,
)

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

CHROMIUM = os.environ.get("ATLAS_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(os.environ.get("ATLAS_TEST_ARTIFACTS", "var/test-artifacts"))


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One headless Chromium per test module."""
    if not os.access(CHROMIUM, os.X_OK):
        service_missing(f"Chromium at {CHROMIUM} (deploy/services/browser.sh installs it)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        service_missing("Playwright for Python (pip install -e '.[dev]')")
    # Playwright's sync API keeps an event loop on this thread; the ORM calls the tests make
    # between browser steps are still plain synchronous code.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            launched = playwright.chromium.launch(
                executable_path=CHROMIUM,
                headless=True,
                args=["--no-sandbox", "--disable-dev-shm-usage"],  # root in CI containers
            )
            yield launched
            launched.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def signed_in(browser: Browser, live_server: Any) -> Iterator[Callable[[Operator], Page]]:
    """``signed_in(operator)``: a fresh browser page logged in to the admin as ``operator``."""
    contexts = []

    def login(operator: Operator) -> Page:
        context = browser.new_context(
            base_url=live_server.url, accept_downloads=True, viewport={"width": 1400, "height": 900}
        )
        context.set_default_timeout(20_000)
        contexts.append(context)
        page = context.new_page()
        page.goto("/admin/login/?next=/admin/")
        page.fill("#id_username", operator.account.get_username())
        page.fill("#id_password", PASSWORD)
        page.click("input[type=submit]")
        page.wait_for_selector("#logout-form, form[action$='logout/']")
        return page

    yield login
    for context in contexts:
        context.close()


@pytest.fixture
def shot(request: pytest.FixtureRequest) -> Callable[[Page, str], Path]:
    """``shot(page, name)``: save a full-page screenshot as a test artifact."""
    folder = ARTIFACTS / "browser"
    folder.mkdir(parents=True, exist_ok=True)
    test = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)

    def save(page: Page, name: str) -> Path:
        path = folder / f"{test}--{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return save


@pytest.fixture
def dls_acme(es: Any, settings: Any, acme: Tenant) -> Iterator[Tenant]:
    """Acme on the real cluster, isolation enforced by it (dls): reads use each user's key."""
    settings.ATLAS_MEMORY_BACKEND = "elasticsearch"
    acme.isolation_mode = Tenant.IsolationMode.DLS
    acme.save()
    yield acme
    bookkeeping.drain()


@pytest.fixture
def seed_memories() -> Callable[[User], dict[str, Any]]:
    """``seed_memories(user)``: two turns, a fact superseded by another, a playbook with two
    successes and a failure. Returns the written documents by name."""

    def seed(user: User) -> dict[str, Any]:
        memory_turn_record(user=user, text="My Lumio Hub v2 keeps dropping wifi after 22:00")
        memory_turn_record(user=user, text="I moved to Edinburgh last month")
        old = memory_write(
            user=user, text=f"{user.external_id} lives in Bristol", memory_type="semantic"
        )
        new = memory_write(
            user=user,
            text=f"{user.external_id} lives in Edinburgh",
            memory_type="semantic",
            supersedes=[old.id],
            contradiction="natural",
        )
        playbook = memory_write(
            user=user,
            text="Reset the Lumio Hub when it drops wifi",
            memory_type="procedural",
            name="hub reset",
            trigger="hub offline",
            steps=["unplug the hub", "hold reset for 10 s", "re-pair the app"],
        )
        for success in (True, True, False):
            procedure_outcome_record(user=user, memory_id=playbook.id, success=success)
        bookkeeping.drain()
        return {"old": old, "new": new, "playbook": playbook}

    return seed


@pytest.fixture
def busy_week(acme: Tenant, alice: User, bob: User) -> None:
    """Memories of each type, a week of recalls at several latencies, consolidation runs that
    succeeded and failed: every chart of the dashboard with every kind of series."""
    memory_turn_record(user=alice, text="My hub drops wifi after 22:00")
    memory_write(user=alice, text="Alice lives in Edinburgh", memory_type="semantic")
    memory_write(
        user=alice, text="Reset the hub", memory_type="procedural", name="hub reset",
        trigger="hub offline", steps=["unplug", "hold reset", "re-pair"],
    )  # fmt: skip
    # An hour back: the hour a recall made now would count in is the recorder's own row.
    now = timezone.now().replace(minute=0, second=0, microsecond=0) - timedelta(hours=1)
    for day in range(7):
        for le_ms, count in ((50, 20 + day), (200, 5), (1000, 1)):
            RecallStat.objects.create(
                tenant=acme, hour=now - timedelta(days=day), le_ms=le_ms, count=count,
                total_ms=count * le_ms * 0.6,
            )  # fmt: skip
    for user, status in ((alice, "done"), (alice, "done"), (alice, "failed"), (alice, "running")):
        ConsolidationRun.objects.create(tenant=acme, user=user, trigger="daily", status=status)
    ConsolidationRun.objects.create(tenant=acme, user=bob, trigger="daily", status="queued")
