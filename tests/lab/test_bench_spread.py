"""``manage.py bench_spread`` runs both plans on the same queries and reports both."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command


@pytest.mark.django_db
@pytest.mark.parametrize("against", ["no-spread", "before"])
def test_bench_spread_times_the_spread_on_and_off(settings, tmp_path, against) -> None:
    settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "served.sqlite3")
    out = StringIO()
    call_command(
        "bench_spread", backend="embedded", memories=120, queries=6, against=against, stdout=out
    )
    report = json.loads(out.getvalue()[out.getvalue().index("{") :])
    assert report["backend"] == "embedded" and report["queries"] == 6
    assert report["against"] == against
    assert report["on"]["n"] == report["off"]["n"] == 6 == report["spread_ms"]["n"]
    assert report["on"]["p50"] > 0 and report["off"]["p50"] > 0
    # The command's private store is gone, and the served one untouched.
    assert str(tmp_path / "served.sqlite3") == settings.ATLAS_EMBEDDED_PATH
    assert not (tmp_path / "served.sqlite3").exists()


@pytest.mark.django_db
def test_bench_spread_benches_any_plan_against_the_default(settings, tmp_path) -> None:
    settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "served.sqlite3")
    out = StringIO()
    plan = '{"feedback_docs": 2, "feedback_dense": 1.0}'
    call_command(
        "bench_spread",
        backend="embedded",
        memories=120,
        queries=6,
        against="default",
        plan=plan,
        stdout=out,
    )
    report = json.loads(out.getvalue()[out.getvalue().index("{") :])
    assert report["against"] == "default" and report["plan"] == plan
    assert report["on"]["n"] == report["off"]["n"] == 6
    assert report["on_cpu_ms"]["n"] == report["off_cpu_ms"]["n"] == 6
    assert report["on_cpu_ms"]["p50"] > 0 and report["off_cpu_ms"]["p50"] > 0
