"""The import contracts (pyproject.toml, ``[tool.importlinter]``) that `make lint` checks: the
tree keeps them, and a back arrow breaks them. Run on a copy of the tree, so a probe module
never touches the checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(  # noqa: S603 - our own venv's tool on our own copy
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


# Where each root package lives: the product's at the top, the lab in its own distribution.
SOURCES = {"lab": ROOT / "atlas-lab" / "lab"}


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("tree")
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    for package in CONFIG["root_packages"]:
        shutil.copytree(
            SOURCES.get(package, ROOT / package),
            copy / package,
            ignore=shutil.ignore_patterns("__pycache__"),
        )
    return copy


def probe(tree: Path, module: str, line: str) -> Path:
    path = tree.joinpath(*module.split(".")).with_suffix(".py")
    path.write_text(f'"""A probe: one forbidden import."""\n\n{line}\n')
    return path


def test_the_tree_keeps_every_import_contract(tree):
    result = lint_imports(tree)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        ("atlas_platform.probe", "import tenants.models", "Apps import only downwards"),
        ("tenants.probe", "import memory.selectors", "Apps import only downwards"),
        ("memory.probe", "import erasure.models", "Apps import only downwards"),
        ("consolidation.probe", "import erasure.models", "Apps import only downwards"),
        ("erasure.probe", "import memory.engine.base", "reach the engine"),
        ("memory.api.probe", "import memory.engine.registry", "reach the engine"),
        # agents sits beside consolidation and erasure, on memory's public API only.
        ("memory.probe", "import agents.models", "Apps import only downwards"),
        ("tenants.probe", "import agents.selectors", "Apps import only downwards"),
        ("consolidation.probe", "import agents.models", "Apps import only downwards"),
        ("erasure.probe", "import agents.services.purge", "Apps import only downwards"),
        ("agents.probe", "import erasure.models", "Apps import only downwards"),
        ("agents.probe", "import memory.engine.registry", "reach the engine"),
        ("agents.probe", "import memory.services.scoping", "through memory.public only"),
        ("agents.probe", "import memory.mcp.server", "through memory.public only"),
        # knowledge sits above agents (it reads projects, sessions, tasks, messages), below
        # the composition root, on memory's public API only.
        ("agents.probe", "import knowledge.models", "Apps import only downwards"),
        ("memory.probe", "import knowledge.selectors", "Apps import only downwards"),
        ("erasure.probe", "import knowledge.models", "Apps import only downwards"),
        ("knowledge.probe", "import atlas_server.urls", "Apps import only downwards"),
        ("knowledge.probe", "import memory.engine.registry", "reach the engine"),
        ("knowledge.probe", "import memory.services.scoping", "through memory.public only"),
        ("knowledge.probe", "import memory.embedding", "through memory.public only"),
        # memory's public API is memory.public alone: every other module of memory is internal
        # to every app above it, the lab included, however it is imported.
        ("consolidation.probe", "import memory.services.writes", "through memory.public only"),
        ("erasure.probe", "from memory.models import RecallStat", "through memory.public only"),
        ("atlas_server.probe", "from memory.mcp import app", "through memory.public only"),
        ("lab.probe", "from memory.services.common import backend", "through memory.public only"),
        ("lab.probe", "import memory", "through memory.public only"),
        # The lab is not in the product's distribution: the product never imports it.
        ("atlas_server.probe", "import lab.candidates", "never imports the lab"),
        ("memory.probe", "import lab.apps", "never imports the lab"),
        ("tenants.probe", "from lab.evaluation import corpus", "never imports the lab"),
    ],
)
def test_a_forbidden_import_breaks_a_contract(tree, module, line, broken):
    path = probe(tree, module, line)
    try:
        result = lint_imports(tree)
    finally:
        path.unlink()

    assert result.returncode != 0
    assert f"{broken}" in result.stdout and "BROKEN" in result.stdout
    assert module in result.stdout


def test_an_app_may_import_memory_public(tree):
    path = probe(tree, "consolidation.probe", "from memory.public import memory_write")
    try:
        result = lint_imports(tree)
    finally:
        path.unlink()

    assert result.returncode == 0, result.stdout + result.stderr


def test_an_import_cycle_inside_an_app_breaks_a_contract(tree):
    # erasure.selectors already reads erasure.models; the models importing back makes a cycle.
    path = probe(tree, "erasure.models_probe", "import erasure.selectors")
    models = tree / "erasure" / "models.py"
    original = models.read_text()
    models.write_text(original + "\nimport erasure.models_probe  # noqa: E402, F401\n")
    try:
        result = lint_imports(tree)
    finally:
        models.write_text(original)
        path.unlink()

    assert result.returncode != 0
    assert "No import cycles" in result.stdout and "BROKEN" in result.stdout
