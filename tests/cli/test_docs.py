"""docs/cli.md against the installed CLI: every `atlas …` command line in its code blocks names
commands that exist and options those commands take (asked of the CLI itself, `--help`), so the
page cannot promise a command or a flag the CLI does not have. What the commands do is tested
by the other modules here (login, doctor, profiles, sync, graph, hooks, spool, conflicts)."""

from __future__ import annotations

import re
import subprocess
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "cli.md"
GLOBAL = {"--profile", "--json", "--timeout", "--help", "--version"}
WORD = re.compile(r"^[a-z][a-z-]*$")


def documented_lines() -> list[str]:
    """Every line of a fenced block that runs ``atlas`` (continuation lines joined)."""
    lines: list[str] = []
    inside, joined = False, ""
    for raw in PAGE.read_text().splitlines():
        if raw.startswith("```"):
            inside = not inside
            continue
        if not inside:
            continue
        line = raw.split("  #", 1)[0].rstrip()
        if joined and raw.startswith(" "):  # a wrapped usage line
            joined += " " + line.strip()
            continue
        if joined:
            lines.append(joined)
        joined = line if line.startswith("atlas ") else ""
    if joined:
        lines.append(joined)
    return lines


@cache
def help_text(bin_dir: Path, *words: str) -> str:
    done = subprocess.run(
        [str(bin_dir / "atlas"), *words, "--help"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, (words, done.stderr)
    return done.stdout


def choices(text: str) -> set[str]:
    """The subcommands a help text offers (argparse's ``{a,b,c}``)."""
    found = re.search(r"\{([a-z0-9,-]+)\}", text)
    return set(found.group(1).split(",")) if found else set()


def commands_of(bin_dir: Path, line: str) -> list[tuple[str, ...]]:
    """The command paths a usage line names: ``atlas task done|fail ID`` is ``task done`` and
    ``task fail``; ``atlas status | doctor`` is ``status`` and ``doctor``."""
    top = choices(help_text(bin_dir))
    words = [w for w in re.split(r"[\s|\[\]]+", line.removeprefix("atlas ")) if WORD.match(w)]
    head = words[0]
    assert head in top, f"docs/cli.md names `atlas {head}`, which the CLI does not have"
    paths: list[tuple[str, ...]] = [(head,)]
    subs = choices(help_text(bin_dir, head))
    for word in words[1:]:
        if word in top and word not in subs:
            paths.append((word,))
        elif word in subs:
            paths.append((head, word))
    return paths


def test_every_documented_command_and_option_exists(atlas_bin):
    lines = documented_lines()
    assert len(lines) >= 20  # the Commands block and the set-up steps were read

    for line in lines:
        paths = commands_of(atlas_bin, line)
        known = set(GLOBAL)
        for path in paths:
            known |= set(re.findall(r"--[a-z][a-z-]*", help_text(atlas_bin, *path)))
        flags = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", line))
        assert flags <= known, (line, sorted(flags - known))


def test_the_check_fails_on_a_command_or_option_the_cli_lacks(atlas_bin):
    """The check can fail: an invented option, and an invented command."""
    known = set(re.findall(r"--[a-z][a-z-]*", help_text(atlas_bin, "sync")))
    assert "--budget" in known and "--dry-run-everything" not in known
    try:
        commands_of(atlas_bin, "atlas teleport --now")
    except AssertionError as exc:
        assert "teleport" in str(exc)
    else:
        raise AssertionError("an unknown command passed the docs check")
