"""The tool catalog's start-up checks of the screen tools and of every entry's schemas."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.examples.navigator.agent import load_catalog
from gateway.tools import catalog
from gateway.tools.catalog import CatalogError, ToolEntry

pytestmark = pytest.mark.unit


def entry(parameters: dict[str, Any], result: dict[str, Any] | None = None) -> ToolEntry:
    return ToolEntry("openThing", "Opens a thing.", parameters, "client", result=result)


def test_the_shipped_catalog_loads_with_both_screen_tools() -> None:
    tools = load_catalog()
    assert not tools["find_screen"].runs_on_client
    assert tools["navigateToScreen"].runs_on_client


def test_a_parameters_schema_that_is_not_json_schema_fails_naming_tool_and_keyword() -> None:
    bad = entry({"type": "object", "properties": {"id": {"type": "strnig"}}})
    with pytest.raises(CatalogError, match=r"'openThing': parameters .* at properties/id/type"):
        catalog.from_entries([bad])


def test_a_result_schema_that_is_not_json_schema_fails_too() -> None:
    bad = entry({"type": "object"}, result={"type": "object", "required": "status"})
    with pytest.raises(CatalogError, match=r"'openThing': result .* at required"):
        catalog.from_entries([bad])


def test_a_server_tool_whose_function_is_missing_fails_naming_the_entry() -> None:
    missing = ToolEntry(
        "find_thing",
        "Finds.",
        {"type": "object"},
        "server:gateway.examples.navigator.screens.tools:nope",
    )
    with pytest.raises(CatalogError, match="'find_thing': executor"):
        catalog.from_entries([missing])
