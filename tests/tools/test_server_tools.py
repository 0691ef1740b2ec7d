"""A catalog's server tools (``gateway.tools.adk``) as ADK puts them in each model request:
the catalog's declaration, built once rather than at every model call, and a request's
copy of it its own."""

from __future__ import annotations

from typing import Any

import pytest
from google.adk.models.llm_request import LlmRequest
from google.genai import types

from gateway.examples.navigator.agent import load_catalog
from gateway.tools.adk import server_tools
from tests.support.counting import counting

pytestmark = pytest.mark.unit


def declared(request: LlmRequest) -> list[types.FunctionDeclaration]:
    return [
        declaration
        for tool in request.config.tools or []
        if isinstance(tool, types.Tool)
        for declaration in tool.function_declarations or []
    ]


def test_each_model_call_declares_the_catalog_entry_without_building_it_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    catalog = load_catalog()
    tools = server_tools(catalog)
    built = counting(monkeypatch, types.FunctionDeclaration, "__init__")
    calls = [LlmRequest(), LlmRequest()]
    for request in calls:
        request.append_tools(list(tools))
    # Built when the tools were (the demo's agent is built at start-up), not per call.
    assert built == []
    first, second = (declared(request) for request in calls)
    entries = catalog.server_entries()
    assert [(d.name, d.description, d.parameters_json_schema) for d in first] == [
        (e.name, e.description, e.parameters) for e in entries
    ]
    assert first == second
    # Each request has its own: what one call sets on its declaration stays there.
    first[0].behavior = types.Behavior.NON_BLOCKING
    assert second[0].behavior is None
    assert declared(_fresh(tools))[0].behavior is None


def _fresh(tools: list[Any]) -> LlmRequest:
    request = LlmRequest()
    request.append_tools(list(tools))
    return request
