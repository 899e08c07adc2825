"""The lab's model candidates are selectable through memory's embedder hook when the lab is
installed; without the lab the product still starts and names what is missing."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured

from lab.candidates import CANDIDATES
from memory.embedding import (
    MiniLMOnnxEmbedder,
    default_embedder,
    load_embedder,
    registered_embedders,
)

ROOT = Path(__file__).resolve().parents[2]


def test_the_lab_app_registers_every_candidate():
    assert "lab.apps.LabConfig" in django_settings.INSTALLED_APPS
    assert set(CANDIDATES) <= set(registered_embedders())


def test_the_default_is_also_selectable_by_its_candidate_name():
    model = load_embedder("minilm-l6-dq8")

    assert isinstance(model, MiniLMOnnxEmbedder) and model.name == default_embedder().name
    assert np.allclose(model.embed(["tea"]), default_embedder().embed(["tea"]), atol=1e-6)


def test_an_unknown_embedder_name_lists_the_candidates_too():
    with pytest.raises(ImproperlyConfigured, match="bge-small-en-v15-int8") as refused:
        load_embedder("bert-huge")
    assert "come with the lab" not in str(refused.value)  # the lab is here
    assert {"e5-small-v2-int8", "multilingual-e5-small-q4", "paraphrase-minilm-l3"} <= set(
        CANDIDATES
    )


def test_a_missing_or_altered_model_jar_fails_at_load(settings, tmp_path):
    settings.ATLAS_EMBEDDING = dataclasses.replace(
        settings.ATLAS_EMBEDDING, models_dir=str(tmp_path), model_path=""
    )
    with pytest.raises(ImproperlyConfigured, match="make models-maven"):
        load_embedder("e5-small-v2-int8")

    forged = tmp_path / "forged.jar"
    with zipfile.ZipFile(forged, "w") as jar:
        jar.writestr("e5-small-v2-q.onnx", b"not the model")
        jar.writestr("e5-small-v2-q-tokenizer.json", b"{}")
    settings.ATLAS_EMBEDDING = dataclasses.replace(settings.ATLAS_EMBEDDING, model_path=str(forged))
    with pytest.raises(ImproperlyConfigured, match="sha256"):
        load_embedder("e5-small-v2-int8")


# Run in a fresh interpreter, in a folder holding the product's packages and no lab (as a
# product install would). The editable install's finder goes too, so that only that folder
# supplies Atlas's modules.
WITHOUT_LAB = """
import sys

sys.meta_path[:] = [
    f for f in sys.meta_path
    if not str(getattr(f, "__module__", type(f).__module__)).startswith("__editable__")
]
import importlib.util

found = importlib.util.find_spec("lab")
assert found is None, (found, sys.path, sys.meta_path)
import django
from django.conf import settings
from django.core.management import call_command

django.setup()
assert not any(app.startswith("lab") for app in settings.INSTALLED_APPS), settings.INSTALLED_APPS
call_command("check")
from memory.embedding import load_embedder, registered_embedders

assert registered_embedders() == [], registered_embedders()
try:
    load_embedder("e5-small-v2-int8")
except Exception as exc:
    print(type(exc).__name__, exc)
"""


def test_without_the_lab_the_product_starts_and_a_candidate_name_points_at_it(tmp_path):
    product = tmp_path / "product"
    product.mkdir()
    for entry in ROOT.iterdir():
        if entry.name not in {"atlas-lab", "tests"} and not entry.name.startswith("."):
            (product / entry.name).symlink_to(entry)
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "atlas_platform.settings"}
    done = subprocess.run(  # noqa: S603 - this interpreter, a fixed script
        [sys.executable, "-c", WITHOUT_LAB],
        cwd=product,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    refusal = done.stdout.strip().splitlines()[-1]  # after `check`'s "no issues" line
    assert refusal.startswith("ImproperlyConfigured ATLAS_EMBEDDER must be one of local, ")
    assert "'e5-small-v2-int8'" in refusal
    assert "come with the lab" in refusal and "DJANGO_SETTINGS_MODULE=lab.settings" in refusal
