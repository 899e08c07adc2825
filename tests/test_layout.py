"""Tests mirror the code's layout (CONTRIBUTING.md, "The test suite"): a test module that sits
outside the rule fails here, so a new test in the wrong place fails CI.

The rule: ``tests/<top>/[<sub>/...]test_*.py``, where ``<top>/<sub>/...`` is a folder of the
code (``CODE``: each app's package at the repository's root, ``deploy/``, the lab's package and
the CLI's), or ``<top>`` is one of the cross-cutting suites (``CROSS_CUTTING``: their own
folders, any depth). Top-level modules are the repository-wide checks in ``TOP_LEVEL`` only.
A test lives in the folder of the code it exercises: the deepest package that holds it (a
test of ``memory/services/recall.py`` in ``tests/memory/services/``); tests of the served API
as a whole (every app's routes, through ``atlas_server.urls``) in ``tests/atlas_server/``.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"

# tests/<top>/ -> the code folder it mirrors (its sub-folders must exist there too).
CODE = {
    **{
        app: ROOT / app
        for app in (
            "atlas_platform",
            "atlas_server",
            "tenants",
            "memory",
            "consolidation",
            "erasure",
            "agents",
            "knowledge",
            "lifecycle",
            "deploy",
        )
    },
    "lab": ROOT / "atlas-lab" / "lab",
    "cli": ROOT / "clients" / "cli" / "atlas_cli",
}
# Suites about the whole system rather than one module, each with its own machinery.
CROSS_CUTTING = {
    "browser": "the admin site driven by Chromium on a live server",
    "faults": "fault injection on a dedicated stack",
    "fuzz": "Hypothesis properties over every route, tool and page",
}
# Repository-wide checks at the top of tests/.
TOP_LEVEL = {
    "test_import_contracts.py": "the import-linter contracts (pyproject.toml)",
    "test_layout.py": "this rule",
    "test_makefile.py": "the Makefile's targets",
    "test_services.py": "the real services the suite runs against",
    "test_test_database.py": "the suite runs on its own test database",
}


def misplaced(path: Path) -> str | None:
    """Why the test module at ``path`` (under tests/) breaks the rule, or None."""
    parts = path.relative_to(TESTS).parts
    if len(parts) == 1:
        return None if parts[0] in TOP_LEVEL else "a top-level test module not in TOP_LEVEL"
    top, folders = parts[0], parts[1:-1]
    if top in CROSS_CUTTING:
        return None
    code = CODE.get(top)
    if code is None:
        return f"tests/{top}/ mirrors no code folder (CODE) and is no suite of CROSS_CUTTING"
    mirrored = code.joinpath(*folders)
    if not mirrored.is_dir():
        return f"{mirrored.relative_to(ROOT)}/ does not exist"
    return None


def _test_module_paths() -> list[Path]:
    return sorted(p for p in TESTS.rglob("test_*.py") if "__pycache__" not in p.parts)


def test_every_test_module_mirrors_the_code_or_is_a_declared_suite():
    wrong = {
        str(path.relative_to(ROOT)): why
        for path in _test_module_paths()
        if (why := misplaced(path)) is not None
    }

    assert wrong == {}, wrong


def test_the_rule_refuses_what_sits_outside_it():
    assert misplaced(TESTS / "api" / "test_new.py") is not None
    assert misplaced(TESTS / "test_new.py") is not None
    assert misplaced(TESTS / "memory" / "nowhere" / "test_new.py") is not None
    assert misplaced(TESTS / "memory" / "services" / "test_new.py") is None
    assert misplaced(TESTS / "cli" / "test_new.py") is None
    assert misplaced(TESTS / "faults" / "deep" / "test_new.py") is None


def test_every_declared_folder_exists():
    assert [top for top, code in CODE.items() if not code.is_dir()] == []
    assert [name for name in TOP_LEVEL if not (TESTS / name).is_file()] == []
