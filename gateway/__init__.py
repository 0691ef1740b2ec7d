"""agent-gateway: a WebSocket-first AG-UI 1.0 gateway for Google ADK agents.

    from gateway import Settings, create_app, serve

``create_app(agent, settings)`` is the ASGI app for an ADK agent or App (mount it, with its
``lifespan``); ``serve(agent, settings)`` runs it. The names load on first use, so
``agent-gateway --help`` does not import ADK. An agent's callbacks and tools read what its
client said with ``gateway.context.run_context``, and who asks with ``gateway.context.caller``.

The package is one layer a folder, each importing only from those below it
(``tests/test_layers.py`` holds it to that), bottom to top:

    wire/       AG-UI frames as msgspec Structs, versions, bounds; config, logs, context
                (below it), metrics.py (what operators scrape) beside it
    store/      ADK sessions and each thread's event log, on SQLite or PostgreSQL; beside
                it auth/ (who is asking), audit/ (what they did), cluster/ (processes
                sharing a database)
    translate/  ADK events -> AG-UI events and messages, no I/O; a2ui/, tools/ beside it
    adk/        the engine over ADK's Runner, hosting and loading an agent; models/
    hub/        threads and runs: planning, driving, pauses, cancel, reattach, fan-out
    doors/      the ASGI app: /ws, POST /invocations (SSE), /ping and the HTTP doors
    api.py      create_app and serve; __main__.py and cli/ the commands
    examples/   the demo and the other example agents, built on all of it
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

# Plain Python of any version: the check below still runs first on an older one.
from gateway import deferred_schemas, optional_imports
from gateway.lazy import reexports

# pyproject.toml's requires-python; tests/test_python_version.py keeps the two equal.
OLDEST_PYTHON = (3, 11)


def require_python(running: tuple[int, ...] | None = None) -> None:
    """Stops an older Python with a sentence that names it, not a SyntaxError or an import
    failure deep in ADK (``pip`` on it blames google-adk, which has no release for it)."""
    running = running or (sys.version_info.major, sys.version_info.minor, sys.version_info.micro)
    if running[:2] < OLDEST_PYTHON:
        found = ".".join(str(part) for part in running[:3])
        raise SystemExit(
            f"agent-gateway needs Python {'.'.join(map(str, OLDEST_PYTHON))} or newer; "
            f"this is Python {found}. Create the environment with a newer one, e.g. "
            "python3.11 -m venv .venv"
        )


require_python()
# Before anything imports google-genai: what it would import only because it is installed.
optional_imports.install()
# Before anything imports ADK: its pydantic models are built when first used.
deferred_schemas.install()

if TYPE_CHECKING:
    from gateway.adk.hosting import Hosted, HostingError
    from gateway.api import create_app, serve
    from gateway.config import Settings
    from gateway.tools.catalog import Catalog
    from gateway.translate.predictions import Prediction

__all__ = ["Catalog", "Hosted", "HostingError", "Prediction", "Settings", "create_app", "serve"]

__getattr__ = reexports(
    __name__,
    {
        "create_app": "gateway.api",
        "serve": "gateway.api",
        "Settings": "gateway.config",
        "Hosted": "gateway.adk.hosting",
        "HostingError": "gateway.adk.hosting",
        "Catalog": "gateway.tools.catalog",
        "Prediction": "gateway.translate.predictions",
    },
)
