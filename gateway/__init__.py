"""agent-gateway: a WebSocket-first AG-UI 1.0 gateway for Google ADK agents.

    from gateway import Settings, create_app, serve

``create_app(agent, settings)`` is the ASGI app for an ADK agent or App (mount it, with its
``lifespan``); ``serve(agent, settings)`` runs it. The names load on first use, so
``agent-gateway --help`` does not import ADK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gateway.adk.hosting import Hosted, HostingError
    from gateway.api import create_app, serve
    from gateway.config import Settings
    from gateway.tools.catalog import Catalog

__all__ = ["Catalog", "Hosted", "HostingError", "Settings", "create_app", "serve"]

_HOMES = {
    "create_app": "gateway.api",
    "serve": "gateway.api",
    "Settings": "gateway.config",
    "Hosted": "gateway.adk.hosting",
    "HostingError": "gateway.adk.hosting",
    "Catalog": "gateway.tools.catalog",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'gateway' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_HOMES[name]), name)
