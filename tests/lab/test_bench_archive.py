"""``manage.py bench_archive`` times both users before and after the archive ran, and the
archive took every superseded fact of the "many" user."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command


@pytest.mark.django_db
def test_bench_archive_times_both_users_before_and_after_archiving(settings, tmp_path) -> None:
    settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "served.sqlite3")
    out = StringIO()
    call_command(
        "bench_archive", backend="embedded", memories=60, superseded=30, queries=4, stdout=out
    )
    report = json.loads(out.getvalue()[out.getvalue().index("{") :])
    assert report["backend"] == "embedded" and report["queries"] == 4
    assert report["archived"] == report["archived_count"] == 30
    for phase in ("before", "after"):
        assert report[phase]["none"]["n"] == report[phase]["many"]["n"] == 4
        assert report[phase]["p50_ratio_many_over_none"] > 0
    assert report["loadavg_start"] and report["loadavg_end"]
    assert not (tmp_path / "served.sqlite3").exists()  # its private store, gone
