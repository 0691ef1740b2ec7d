"""The oldest Python the gateway runs on is said once in pyproject.toml and once in the
package, and an older one stops with a sentence naming both versions."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

import gateway

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]


def test_the_package_and_pyproject_name_the_same_oldest_python() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    oldest = ".".join(map(str, gateway.OLDEST_PYTHON))
    assert project["requires-python"] == f">={oldest}"


def test_an_older_python_is_told_what_to_use() -> None:
    with pytest.raises(SystemExit, match=r"needs Python 3\.11 or newer; this is Python 3\.10\.12"):
        gateway.require_python((3, 10, 12))
    gateway.require_python((3, 11, 0))
    gateway.require_python((3, 13, 1))
