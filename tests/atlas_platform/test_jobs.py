"""job_enqueue: by task name, after the commit; eager mode on a background thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import transaction
from kombu.exceptions import OperationalError

from atlas_platform.celery import app
from atlas_platform.jobs import job_enqueue, job_pending, jobs_flush
from atlas_platform.models import OutboxJob

ran: list[tuple[int, str]] = []
finished = threading.Event()


@app.task(name="tests.jobs.record")  # type: ignore[untyped-decorator]
def record(value: int) -> None:
    ran.append((value, threading.current_thread().name))
    finished.set()


@pytest.fixture
def eager() -> Iterator[Callable[[bool], None]]:
    """Set Celery's eager mode for one test (restored after it)."""
    saved = app.conf.task_always_eager

    def set_eager(on: bool) -> None:
        app.conf.task_always_eager = on

    yield set_eager
    app.conf.task_always_eager = saved


@pytest.fixture
def broker(monkeypatch: pytest.MonkeyPatch, eager: Any) -> list[dict[str, Any]]:
    """What would have gone to the broker (eager mode off)."""
    sent: list[dict[str, Any]] = []
    eager(False)
    monkeypatch.setattr(app, "send_task", lambda name, **kw: sent.append({"name": name, **kw}))
    return sent


def test_a_job_is_sent_by_name_only_once_the_transaction_commits(
    db: None, broker: list[dict[str, Any]], settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.CELERY_TASK_DEFAULT_QUEUE = "q-default"
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        job_enqueue("tests.jobs.record", 7)
        job_enqueue("tests.jobs.record", 8, queue="q-erasure")
        assert broker == []  # nothing before the commit

    assert broker == [
        {"name": "tests.jobs.record", "args": [7], "queue": "q-default", "retry": False},
        {"name": "tests.jobs.record", "args": [8], "queue": "q-erasure", "retry": False},
    ]
    assert not OutboxJob.objects.exists()  # sent: nothing waits


def test_a_job_of_a_rolled_back_transaction_is_never_sent(
    db: None, broker: list[dict[str, Any]], django_capture_on_commit_callbacks: Any
) -> None:
    capture = django_capture_on_commit_callbacks(execute=True)
    with capture, pytest.raises(ZeroDivisionError), transaction.atomic():
        job_enqueue("tests.jobs.record", 1)
        _ = 1 / 0

    assert broker == []


def test_a_broker_that_is_down_is_logged_not_raised(
    db: None,
    monkeypatch: pytest.MonkeyPatch,
    eager: Any,
    caplog: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    def down(name: str, **kwargs: Any) -> None:
        raise OperationalError("connection refused")

    eager(False)
    monkeypatch.setattr(app, "send_task", down)
    with django_capture_on_commit_callbacks(execute=True), caplog.at_level("WARNING"):
        job_enqueue("tests.jobs.record", 1)

    assert "job not sent" in caplog.text
    waiting = OutboxJob.objects.get()
    assert (waiting.name, waiting.args, waiting.ref) == ("tests.jobs.record", [1], "")


def test_a_job_the_broker_missed_is_sent_by_the_flush_once_it_is_back(
    db: None,
    monkeypatch: pytest.MonkeyPatch,
    eager: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    sent: list[str] = []
    down = True

    def send(name: str, **kwargs: Any) -> None:
        if down:
            raise OperationalError("connection refused")
        sent.append(name)

    eager(False)
    monkeypatch.setattr(app, "send_task", send)
    with django_capture_on_commit_callbacks(execute=True):
        job_enqueue("tests.jobs.record", 1, ref="thing:1")
    assert job_pending("thing:1") and not job_pending("thing:2")
    assert jobs_flush(min_age_s=0) == 0  # still down: it stays

    down = False
    assert jobs_flush(min_age_s=0) == 1
    assert sent == ["tests.jobs.record"]
    assert not job_pending("thing:1") and jobs_flush(min_age_s=0) == 0


def test_a_broker_that_does_not_answer_costs_the_caller_the_budget_only(
    db: None,
    monkeypatch: pytest.MonkeyPatch,
    eager: Any,
    settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    release = threading.Event()
    settings.ATLAS_BROKER_TIMEOUT_S = 0.3
    eager(False)
    monkeypatch.setattr(app, "send_task", lambda name, **kw: release.wait(5))
    started = time.monotonic()
    with django_capture_on_commit_callbacks(execute=True):
        job_enqueue("tests.jobs.record", 1, ref="slow:1")
    waited = time.monotonic() - started
    release.set()

    assert waited < 1.0
    assert job_pending("slow:1")


def test_in_eager_mode_the_job_runs_on_a_background_thread(
    db: None, eager: Any, django_capture_on_commit_callbacks: Any
) -> None:
    eager(True)
    ran.clear()
    finished.clear()
    with django_capture_on_commit_callbacks(execute=True):
        job_enqueue("tests.jobs.record", 3)

    assert finished.wait(timeout=10)
    assert ran == [(3, "tests.jobs.record")]  # not the caller's thread
    assert threading.current_thread().name != "tests.jobs.record"
