"""memory.public, the one module the other apps import of memory: every name it declares is the
object its home module defines, the names mypy sees are the names it serves, and a name loads
only its own module."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import memory.public as public

SOURCE = Path(public.__file__).read_text()


def _type_checking_imports() -> dict[str, str]:
    """name -> module of the imports under ``if TYPE_CHECKING:`` (what mypy sees)."""
    block = next(
        node
        for node in ast.parse(SOURCE).body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    )
    return {
        alias.name: str(statement.module)
        for statement in block.body
        if isinstance(statement, ast.ImportFrom)
        for alias in statement.names
    }


def test_every_declared_name_is_its_home_modules_object():
    for name, home in public._HOMES.items():
        assert getattr(public, name) is getattr(importlib.import_module(home), name), name


def test_what_mypy_sees_is_what_the_module_serves():
    assert _type_checking_imports() == public._HOMES
    assert sorted(public.__all__) == sorted(public._HOMES)
    assert set(public.__all__) <= set(dir(public))


def test_an_undeclared_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="memory_backend"):
        public.memory_backend  # type: ignore[attr-defined]  # noqa: B018 - mypy refuses it too
    with pytest.raises(ImportError):
        exec("from memory.public import backend", {})  # noqa: S102 - a fixed statement


# A fresh interpreter: Django set up (with the lab's settings, as the suite runs), then one
# service from memory.public; the MCP host and the REST views stay unloaded.
ONE_NAME = """
import sys

import django

django.setup()
from memory.public import memory_write

assert memory_write.__module__ == "memory.services.writes"
HOSTS = ("memory.mcp.server", "atlas_platform.mcp.app", "memory.api.views")
print(sorted(m for m in HOSTS if m in sys.modules))
"""


def test_a_name_loads_its_own_module_only():
    done = subprocess.run(  # noqa: S603 - this interpreter, a fixed script
        [sys.executable, "-c", ONE_NAME],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"
