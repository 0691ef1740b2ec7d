"""Server tools of the screen-navigation domain."""

from __future__ import annotations

import logging
from typing import Any

from google.adk.tools.tool_context import ToolContext

from gateway.examples.navigator.screens import catalog
from gateway.examples.navigator.screens.catalog import ScreenCatalog

log = logging.getLogger(__name__)

RESULT_LIMIT = 5


def find_screen(query: str, tool_context: ToolContext) -> dict[str, Any]:
    """Searches the screens this user may open; a failure is a value the model can explain."""
    try:
        screens = catalog.load()
    except Exception as exc:  # the model explains a missing catalog instead of the run dying
        log.exception("the screen catalog could not be loaded")
        return {"error": f"screen search is unavailable ({type(exc).__name__})"}
    return search_screens(screens, query, tool_context.user_id)


def search_screens(screens: ScreenCatalog, query: str, user_id: str) -> dict[str, Any]:
    """``find_screen`` over a given catalog: what the tool returns, and what the bench times."""
    if not isinstance(query, str) or not query.strip():
        return {"error": "The query is empty: ask the user which screen they mean."}
    try:
        found = screens.search(query, user_id, RESULT_LIMIT)
    except Exception as exc:  # the model explains a failed search instead of the run dying
        log.exception("find_screen failed for %r", query)
        return {"error": f"screen search is unavailable ({type(exc).__name__})"}
    return {"screens": [screen.as_result() for screen in found]}
