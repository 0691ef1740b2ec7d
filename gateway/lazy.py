"""Names a package re-exports, each imported from its module when first asked for.

A package's ``__init__`` that imports its modules to re-export their names makes every
import of any one of its modules import them all: ``gateway.store.cut_off`` would bring the
whole store, SQLite's included, into a worker process that stores nothing. With
``__getattr__ = reexports(__name__, homes)`` (PEP 562) a name is looked up in its module
the first time someone asks the package for it, and a type checker still sees the names
through the package's ``TYPE_CHECKING`` imports.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["reexports"]


def reexports(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of ``package`` for ``homes``: each name's module, dotted
    in full."""

    def __getattr__(name: str) -> Any:
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(homes[name]), name)

    return __getattr__
