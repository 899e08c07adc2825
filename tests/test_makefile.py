"""What `make run` would do, read from make's dry run (nothing is installed or served): the
runtime-only install, and the Host headers it accepts with HOST=0.0.0.0."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def dry_run(tmp_path: Path, *args: str) -> str:
    """``make -n`` in a copy holding only the Makefile and the pyprojects (a fresh clone's
    view)."""
    (tmp_path / "atlas-lab").mkdir(exist_ok=True)
    for name in ("Makefile", "pyproject.toml", "atlas-lab/pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    make = shutil.which("make") or "make"
    done = subprocess.run(  # noqa: S603 - fixed arguments
        [make, "-n", *args], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    return done.stdout


def test_run_installs_the_runtime_only_and_test_adds_the_dev_extra(tmp_path: Path) -> None:
    run = dry_run(tmp_path, "run")
    test = dry_run(tmp_path, "test")

    assert "pip install --quiet -e .\n" in run and ".[dev]" not in run
    assert "atlas-lab" not in run and "lab.settings" not in run  # the product, without the lab
    assert "-e '.[dev]' -e ./atlas-lab" in test


def test_the_lab_commands_run_with_the_lab_settings(tmp_path: Path) -> None:
    for target in ("eval", "bench-models"):
        lines = [line for line in dry_run(tmp_path, target).splitlines() if "manage.py" in line]
        lab_commands = [line for line in lines if "eval_recall" in line or "bench_models" in line]
        assert lab_commands and all(
            "DJANGO_SETTINGS_MODULE=lab.settings" in line for line in lab_commands
        )


def test_host_0_0_0_0_accepts_other_hosts_and_the_default_stays_local(tmp_path: Path) -> None:
    everywhere = dry_run(tmp_path, "run", "HOST=0.0.0.0")
    local = dry_run(tmp_path, "run")

    assert 'ALLOWED_HOSTS="${ALLOWED_HOSTS:-*}"' in everywhere
    assert 'ALLOWED_HOSTS="${ALLOWED_HOSTS:-127.0.0.1,localhost,127.0.0.1}"' in local


def test_reset_demo_passes_reset(tmp_path: Path) -> None:
    assert "atlas_demo" in dry_run(tmp_path, "run") and "--reset" not in dry_run(tmp_path, "run")
    assert "--reset" in dry_run(tmp_path, "run", "RESET_DEMO=1")
