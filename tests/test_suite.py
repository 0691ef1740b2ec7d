"""The suite's own floor plan: helpers live in tests/support, never in another test module,
and a conftest.py holds fixtures and pytest's hooks only. Every test's one tier is checked
as the suite is collected (tests/support/tiers.py): a module that has none fails to collect,
saying which and what to add, on xdist's workers too."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT
from tests.support.budgets import scaled

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


@pytest.mark.process
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["in-process", "xdist"])
def test_a_module_without_a_tier_is_named_with_what_to_add(
    tmp_path: Path, workers: list[str]
) -> None:
    # The suite's hooks over a folder of its own: a module of the suite is never touched.
    (tmp_path / "conftest.py").write_text("from tests.conftest import *  # noqa: F403\n")
    (tmp_path / "test_untiered.py").write_text("def test_nothing() -> None:\n    pass\n")
    (tmp_path / "test_tiered.py").write_text(
        "import pytest\n\npytestmark = pytest.mark.unit\n\n\ndef test_fine() -> None:\n    pass\n"
    )
    suite = ["-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path), str(tmp_path)]
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *workers, *suite],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=scaled(120),
    )
    said = ran.stdout + ran.stderr
    assert ran.returncode != 0, said
    assert "INTERNALERROR" not in said, said
    assert (
        "test_untiered.py::test_nothing: no tier marker: add `pytestmark = pytest.mark.unit`"
        in said
    ), said
    assert "test_tiered.py" not in said.split("short test summary")[-1], said
