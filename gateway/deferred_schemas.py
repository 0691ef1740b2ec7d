"""ADK's pydantic models, built on first use rather than as their modules are imported.

pydantic builds a model's validator and serializer (a core schema, then Rust structures
made from it) when its class statement runs, unless its config says ``defer_build``; then
the first validation, serialization or schema of the class builds them. google-genai's
models say it (its ``types`` holds several hundred), ADK's do not: an idle gateway had
built ~140 models of ADK and of what ADK imports (``fastapi.openapi.models``, for its
OAuth schemes), of which its runs use ~30 (the demo's warm-up). The others are ADK's live
requests, auth schemes, code executors, tools' and agents' configurations: ~5 MiB of every
gateway process and every worker, idle (``scripts/bench_footprint.py``).

``install()`` (``gateway/__init__.py`` calls it) puts a finder first on ``sys.meta_path``.
Each module of ``DEFERRED`` it finds the usual way runs with pydantic's default of
``defer_build`` set to true, and the default is put back as its import ends. What the
module defines keeps its own config, the default read once at the class statement; a
class that says ``defer_build`` itself keeps what it says. So only *when* an ADK model is
built moves: its fields, validation, errors, serialization and JSON schema are the same,
the first use pays the build (the warm-up's runs pay for those a run uses). A user's model,
a subclass of an ADK agent included, is built as its class statement runs, as before: its
module is not one of ``DEFERRED``, and the config it inherits does not carry the default.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import sys
import threading
import types
from collections.abc import Iterator, Sequence

from gateway.optional_imports import ExecutedWithin

__all__ = ["DEFERRED", "deferred", "install"]

# The packages whose models wait for their first use: ADK, and fastapi, which ADK imports
# for the OpenAPI models of its auth schemes.
DEFERRED = ("google.adk", "fastapi")

_lock = threading.Lock()
_depth = 0
_before: object = None


def _is_deferred(fullname: str) -> bool:
    return any(fullname == name or fullname.startswith(name + ".") for name in DEFERRED)


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Inside, pydantic's default of ``defer_build`` is true (nested imports: once)."""
    from pydantic._internal import _config

    global _depth, _before
    with _lock:
        if _depth == 0:
            _before = _config.config_defaults.get("defer_build", False)
            _config.config_defaults["defer_build"] = True
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                _config.config_defaults["defer_build"] = bool(_before)


class _DeferringFinder(importlib.abc.MetaPathFinder):
    """Finds a module of ``DEFERRED`` with the finders after it, and has it run inside
    ``deferred()``."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if not _is_deferred(fullname):
            return None
        for finder in sys.meta_path[sys.meta_path.index(self) + 1 :]:
            find = getattr(finder, "find_spec", None)
            spec: importlib.machinery.ModuleSpec | None = (
                find(fullname, path, target) if find is not None else None
            )
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = ExecutedWithin(spec.loader, deferred)
                return spec
        return None


def install() -> None:
    """Defers the models of ``DEFERRED`` modules imported from now on; nothing when this
    was installed already."""
    if any(isinstance(finder, _DeferringFinder) for finder in sys.meta_path):
        return
    sys.meta_path.insert(0, _DeferringFinder())
