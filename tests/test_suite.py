"""The suite's own floor plan: helpers live in tests/support, never in another test module,
and a conftest.py holds fixtures and pytest's hooks only. (Every test's one tier is checked
as the suite is collected: tests/support/tiers.py.)"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

TESTS = Path(__file__).parent


def modules() -> list[Path]:
    return sorted(path for path in TESTS.rglob("*.py") if "node_modules" not in path.parts)


def imported(tree: ast.Module) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
            names += [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
    return names


def test_no_module_imports_a_test_module() -> None:
    found = [
        f"{path.relative_to(TESTS)}: {name}"
        for path in modules()
        for name in imported(ast.parse(path.read_text(encoding="utf-8")))
        if name.startswith("tests.")
        and any(part.startswith("test_") or part == "conftest" for part in name.split("."))
    ]
    assert not found, "import it from tests.support instead:\n" + "\n".join(found)


def test_a_conftest_holds_fixtures_and_hooks_only() -> None:
    found = []
    for path in TESTS.rglob("conftest.py"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                fixture = any("fixture" in ast.unparse(d) for d in node.decorator_list)
                if not fixture and not node.name.startswith("pytest_"):
                    found.append(f"{path.relative_to(TESTS)}: {node.name}")
            elif isinstance(node, ast.ClassDef):
                found.append(f"{path.relative_to(TESTS)}: class {node.name}")
    assert not found, "helpers belong in tests/support:\n" + "\n".join(found)
