"""Print the size and shape of Atlas's product code: lines per module and lines per function
(median, 90th percentile, the largest ten of each), over the product's packages (the apps, the
server, and the CLI client), leaving out tests, migrations and the lab.

    python deploy/code_figures.py [--root CHECKOUT] [--package DIR]... [--json]

A function's length runs from its ``def`` line to its last line (decorators and docstring
included); a nested function is counted on its own and inside its parent. Standard library only,
so it runs on any checkout (``--root``) without installing it.
"""

from __future__ import annotations

import argparse
import ast
import json
import math
import statistics
from pathlib import Path
from typing import Any

PRODUCT = (
    "atlas_platform",
    "atlas_server",
    "tenants",
    "memory",
    "consolidation",
    "erasure",
    "agents",
    "knowledge",
    "lifecycle",
    "clients/cli/atlas_cli",
)
SKIPPED_PARTS = {"migrations", "tests", "__pycache__"}


def modules(root: Path, packages: tuple[str, ...] = PRODUCT) -> list[Path]:
    """Every module of ``packages`` (folders) under ``root``, in path order."""
    found = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if not SKIPPED_PARTS & set(path.relative_to(root).parts):
                found.append(path)
    return found


def functions(path: Path, root: Path) -> list[tuple[int, str]]:
    """(lines, ``module.py:qualified.name``) for every function and method in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    rel = path.relative_to(root).as_posix()
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                found.append(((child.end_lineno or child.lineno) - first + 1, f"{rel}:{name}"))
                visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def percentile(values: list[int], share: float) -> int:
    """The nearest-rank percentile (``share`` 0.9: the value 90 % of them do not exceed)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def summary(sized: list[tuple[int, str]]) -> dict[str, Any]:
    values = [size for size, _ in sized]
    return {
        "count": len(values),
        "total": sum(values),
        "median": statistics.median(values),
        "p90": percentile(values, 0.9),
        "largest": [
            {"lines": size, "name": name}
            for size, name in sorted(sized, key=lambda item: (-item[0], item[1]))[:10]
        ],
    }


def figures(root: Path, packages: tuple[str, ...] = PRODUCT) -> dict[str, Any]:
    paths = modules(root, packages)
    module_sizes = [
        (len(p.read_text(encoding="utf-8").splitlines()), p.relative_to(root).as_posix())
        for p in paths
    ]
    function_sizes = [item for p in paths for item in functions(p, root)]
    return {"modules": summary(module_sizes), "functions": summary(function_sizes)}


def text(found: dict[str, Any]) -> str:
    lines = []
    for kind, unit in (("modules", "lines per module"), ("functions", "lines per function")):
        part = found[kind]
        lines.append(
            f"{kind}: {part['count']} ({part['total']} lines); {unit}: "
            f"median {part['median']:g}, 90th percentile {part['p90']}"
        )
        lines += [f"  {item['lines']:>5}  {item['name']}" for item in part["largest"]]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--root", type=Path, default=Path(__file__).resolve().parents[1], help="a checkout"
    )
    parser.add_argument(
        "--package", action="append", help="only this folder (repeatable; default: the product)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args()
    found = figures(args.root, tuple(args.package or PRODUCT))
    print(json.dumps(found, indent=2) if args.json else text(found))


if __name__ == "__main__":
    main()
