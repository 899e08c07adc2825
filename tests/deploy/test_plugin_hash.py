"""deploy/services/lib.sh's plugin stamp, run from two clones of one commit against a
throwaway plugin folder (never the shared node): both see the plugin up to date, so neither
up.sh would rebuild it and restart Elasticsearch under the other; a changed source does."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIB = ROOT / "deploy" / "services" / "lib.sh"
SOURCE = ROOT / "deploy" / "elasticsearch" / "atlas-analysis"
VERSION = "9.5.4"


def bash(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``script`` in bash with lib.sh sourced (it only defines settings and functions)."""
    return subprocess.run(  # noqa: S603 - fixed arguments, our own script
        ["/bin/bash", "-c", f'source "{LIB}"; {script}', "bash", *args],
        capture_output=True,
        text=True,
        check=False,
    )


def clone(tmp_path: Path, name: str) -> Path:
    """A checkout's copy of the plugin source somewhere else on disk."""
    where = tmp_path / name / "deploy" / "elasticsearch" / "atlas-analysis"
    shutil.copytree(SOURCE, where)
    return where


def source_hash(src: Path) -> str:
    done = bash('plugin_source_hash "$1"', str(src))
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def installed(tmp_path: Path, stamp: str) -> Path:
    """An installed plugin folder (the jar's content does not matter to the stamp)."""
    plugin = tmp_path / "plugins" / "atlas-analysis"
    plugin.mkdir(parents=True)
    (plugin / "atlas-analysis.jar").write_bytes(b"jar")
    (plugin / "source.sha256").write_text(stamp + "\n")
    return plugin


def up_to_date(src: Path, plugin: Path) -> bool:
    return bash('plugin_up_to_date "$1" "$2" "$3"', str(src), str(plugin), VERSION).returncode == 0


def test_two_clones_of_one_commit_hash_the_same(tmp_path: Path) -> None:
    first, second = clone(tmp_path, "one"), clone(tmp_path, "elsewhere/two")

    assert source_hash(first) == source_hash(second) == source_hash(SOURCE)
    assert len(source_hash(first)) == 64


def test_a_plugin_built_from_one_clone_is_up_to_date_for_the_other(tmp_path: Path) -> None:
    first, second = clone(tmp_path, "one"), clone(tmp_path, "two")
    plugin = installed(tmp_path, f"{source_hash(first)} {VERSION}")

    assert up_to_date(first, plugin) and up_to_date(second, plugin)


def test_changed_content_a_renamed_file_or_another_version_rebuild(tmp_path: Path) -> None:
    src = clone(tmp_path, "one")
    plugin = installed(tmp_path, f"{source_hash(src)} {VERSION}")
    java = next(src.rglob("*.java"))

    assert bash('plugin_up_to_date "$1" "$2" 9.9.9', str(src), str(plugin)).returncode != 0
    java.write_text(java.read_text() + "\n// changed\n")
    assert not up_to_date(src, plugin)
    java.write_text(java.read_text().removesuffix("\n// changed\n"))
    assert up_to_date(src, plugin)
    java.rename(java.with_name("Renamed.java"))
    assert not up_to_date(src, plugin)


def test_a_legacy_stamp_of_the_same_checkout_is_rewritten_without_a_rebuild(
    tmp_path: Path,
) -> None:
    src = clone(tmp_path, "one")
    legacy = bash('legacy_plugin_source_hash "$1"', str(src)).stdout.strip()
    plugin = installed(tmp_path, f"{legacy} {VERSION}")

    assert up_to_date(src, plugin)
    assert (plugin / "source.sha256").read_text().strip() == f"{source_hash(src)} {VERSION}"
    assert up_to_date(clone(tmp_path, "two"), plugin)  # and from now on for every clone


def test_a_missing_jar_always_rebuilds(tmp_path: Path) -> None:
    src = clone(tmp_path, "one")
    plugin = installed(tmp_path, f"{source_hash(src)} {VERSION}")
    (plugin / "atlas-analysis.jar").unlink()

    assert not up_to_date(src, plugin)
