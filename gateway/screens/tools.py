"""Server tools of the screen-navigation domain."""

from __future__ import annotations

import logging
from typing import Any

from google.adk.tools.tool_context import ToolContext

from gateway.screens import catalog

log = logging.getLogger(__name__)


def find_screen(query: str, tool_context: ToolContext) -> dict[str, Any]:
    """Searches the screens this user may open; a failure is a value the model can explain."""
    try:
        screens = catalog.load().search(query, tool_context.user_id)
    except Exception as exc:  # the model explains a failed search instead of the run dying
        log.exception("find_screen failed for %r", query)
        return {"error": f"screen search is unavailable ({type(exc).__name__})"}
    return {"screens": [screen.as_result() for screen in screens]}
