"""google-genai's optional imports that change nothing it does, kept out of a gateway.

google-genai's package imports its types and its client at once, and both try to import
httpx2 (and, through httpx, httpx's command line: pygments), taking whatever is installed.
Installed is not asked for: a venv that holds them for another reason (mcp brings httpx2,
pytest pygments) made every gateway process, and every worker, ~2 MiB bigger, for a
transport google-genai uses only when ``GOOGLE_GENAI_HTTP_CLIENT=httpx2`` says so, and a
command line nobody runs in a server.

aiohttp is left as it is, though it is the largest (9.6 MiB; ag-ui-adk brings it): where it
is installed google-genai sends with it, and reads an agent's ``async_client_args`` as
aiohttp's (an ``ssl`` context, say). Hidden, those would be given to httpx, which does not
know them, and a model reached through them would fail (a test's Live server did).

``install()`` (``gateway/__init__.py`` calls it, before anything imports google-genai)
puts a one-shot finder first on ``sys.meta_path``. When ``google.genai`` is imported, the
package's own module runs with those names hidden (``None`` in ``sys.modules``: the import
system's rule for "import name" raising ImportError), as on a machine without them; then
they are visible again, and the finder is gone. What imports them itself later (ADK's MCP
toolset with mcp 2.x) gets them as before. A name stays visible when it is already
imported, and httpx2 when ``GOOGLE_GENAI_HTTP_CLIENT=httpx2`` (google-genai's own switch)
selects it.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager

__all__ = ["OPTIONAL", "ExecutedWithin", "hidden", "install", "unused"]

# What google-genai imports when it finds it, and uses only when asked: httpx2 where its
# switch says so, and httpx's command line (pygments; rich and click after it).
OPTIONAL = ("httpx2", "pygments")
GENAI = "google.genai"


def unused(environ: Mapping[str, str] = os.environ) -> tuple[str, ...]:
    """The names of ``OPTIONAL`` to hide from google-genai's import: not imported yet, and
    not selected by ``GOOGLE_GENAI_HTTP_CLIENT``."""
    chosen = {"httpx2"} & {environ.get("GOOGLE_GENAI_HTTP_CLIENT", "").strip().lower()}
    return tuple(name for name in OPTIONAL if name not in sys.modules and name not in chosen)


@contextlib.contextmanager
def hidden(names: Sequence[str]) -> Iterator[None]:
    """Inside, ``import name`` raises ImportError for each of ``names`` (none of which is
    imported), as if it were not installed; after, each imports as before."""
    for name in names:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        for name in names:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]


class ExecutedWithin(importlib.abc.Loader):
    """A module's own loader, running the module inside ``within()`` (a context manager);
    the module keeps the real loader (``importlib.resources`` reads a package's files
    through it). Here google-genai's package runs with ``unused()`` hidden;
    ``gateway.deferred_schemas`` runs ADK's modules with pydantic's builds deferred."""

    def __init__(
        self, loader: importlib.abc.Loader, within: Callable[[], AbstractContextManager[object]]
    ) -> None:
        self._loader = loader
        self._within = within

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        with self._within():
            self._loader.exec_module(module)


def _hiding_unused() -> AbstractContextManager[None]:
    return hidden(unused())


class _GenaiFinder(importlib.abc.MetaPathFinder):
    """Finds ``google.genai`` the usual way, once, and hands it a loader that hides them."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != GENAI:
            return None
        sys.meta_path.remove(self)  # one import only; the finders after it do the finding
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None:
            spec.loader = ExecutedWithin(spec.loader, _hiding_unused)
        return spec


def install() -> None:
    """Hides ``OPTIONAL`` from google-genai's import to come; nothing when it was imported
    already (the gateway imported after it, as a library) or this was installed."""
    if GENAI in sys.modules or any(isinstance(f, _GenaiFinder) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _GenaiFinder())
