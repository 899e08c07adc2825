"""agents sits beside consolidation and erasure, above memory: a back arrow, a sideways
arrow, or a reach past memory's public API breaks an import contract (`make lint`)."""

from __future__ import annotations

import pytest

from tests.test_import_contracts import lint_imports, probe, tree  # noqa: F401 - the fixture


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        ("memory.probe", "import agents.models", "Apps import only downwards"),
        ("tenants.probe", "import agents.selectors", "Apps import only downwards"),
        ("consolidation.probe", "import agents.models", "Apps import only downwards"),
        ("erasure.probe", "import agents.services.purge", "Apps import only downwards"),
        ("agents.probe", "import erasure.models", "Apps import only downwards"),
        ("agents.probe", "import memory.engine.registry", "reach the engine"),
        ("agents.probe", "import memory.services.scoping", "memory's public API only"),
        ("agents.probe", "import memory.mcp.server", "memory's public API only"),
    ],
)
def test_a_forbidden_import_around_agents_breaks_a_contract(tree, module, line, broken):  # noqa: F811
    path = probe(tree, module, line)
    try:
        result = lint_imports(tree)
    finally:
        path.unlink()

    assert result.returncode != 0
    assert broken in result.stdout and "BROKEN" in result.stdout
    assert module in result.stdout


def test_agents_keeps_its_contracts_today(tree):  # noqa: F811
    result = lint_imports(tree)

    assert "consolidation, erasure, agents KEPT" in result.stdout  # the layers
    assert "MCP bases) KEPT" in result.stdout  # memory's public API only
    broken = result.stdout.partition("Broken contracts")[2]
    assert "agents." not in broken and "agents " not in broken
