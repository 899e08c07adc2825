"""The brief eval: the histories' contract, the fact check, and the command on one history
(embedded store, real PostgreSQL): figures per budget, the targets at 1,500 tokens."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from lab.evaluation.brief import fact_present, histories
from tenants.models import Tenant


def test_the_histories_have_both_splits_several_projects_and_two_machines() -> None:
    found = histories("all")
    assert {h["split"] for h in found} == {"dev", "test"}
    for h in found:
        assert len(h["projects"]) >= 3 and h["focus"] == h["projects"][0]["name"]
        kinds = {e["kind"] for e in h["events"]}
        assert {"note", "conflict", "task", "memory", "session", "message"} <= kinds
        assert {e["machine"] for e in h["events"] if e["kind"] == "session"} <= {
            "laptop",
            "desktop",
        }
        assert h["machine"] in ("laptop", "desktop") and len(h["needed"]) >= 10


def test_a_fact_is_one_phrase_all_phrases_or_phrases_on_one_line() -> None:
    text = "## A\n- docs/x.md blocked by docs/y.md\n- merge z.md"
    assert fact_present({"fact": "f", "any": ["nope", "BLOCKED by"]}, text)
    assert fact_present({"fact": "f", "all": ["x.md", "z.md"]}, text)
    assert fact_present({"fact": "f", "line": ["x.md", "y.md"]}, text)
    assert not fact_present({"fact": "f", "line": ["x.md", "merge"]}, text)


@pytest.mark.services
@pytest.mark.django_db
def test_eval_brief_prints_the_figures_per_budget_and_meets_the_targets(
    settings: Any, tmp_path: Path, capsys: Any
) -> None:
    settings.ATLAS_MEMORY_BACKEND = "embedded"
    settings.ATLAS_EMBEDDED_PATH = str(tmp_path / "memory.sqlite3")
    out = tmp_path / "brief.json"
    call_command(
        "eval_brief",
        split="dev",
        histories="h00-shop",
        budgets="500,1500",
        json_path=str(out),
        targets=True,
        clean=True,
    )
    printed = capsys.readouterr().out
    assert "eval_brief: 1 histories (dev)" in printed
    report = json.loads(out.read_text())["budgets"]
    assert report["1500"]["facts"] >= 0.9
    assert report["1500"]["duplicated"] == report["1500"]["off_project"] == 0
    assert report["500"]["tokens_max"] <= 500 < report["1500"]["tokens_max"] <= 1500
    # --clean leaves nothing behind: no tenant, no memory, no note in the store
    assert not Tenant.objects.filter(slug__startswith="brief-eval").exists()
    with sqlite3.connect(settings.ATLAS_EMBEDDED_PATH) as store:
        assert store.execute("SELECT count(*) FROM memories").fetchone() == (0,)
