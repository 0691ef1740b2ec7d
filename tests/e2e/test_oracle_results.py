"""ag-ui-adk beside the gateway on a tool that returns a pydantic model and one that
returns a dataclass (tests/support/dojo/results.py): the official client is shown the
same JSON result through both."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.agui import new_id
from tests.support.agui_adk import running_agui_adk
from tests.support.dojo import results
from tests.support.official_client import NEEDS_NODE, accepted, base_input, run_http_agent
from tests.support.servers import running_gateway

pytestmark = [NEEDS_NODE, pytest.mark.browser]


async def test_typed_tool_results_read_the_same_through_both() -> None:
    shown: list[list[Any]] = []
    for serve in ("gateway", "ag-ui-adk"):
        got = []
        for ask in ("weather in Seoul", "forecast for Busan"):
            run_input = base_input(
                new_id("t"), [{"id": new_id("m"), "role": "user", "content": ask}]
            )
            run_input["tools"] = []
            if serve == "gateway":
                async with running_gateway(agent=results.root_agent) as gateway:
                    report = await run_http_agent(gateway, run_input)
            else:
                async with running_agui_adk(results.root_agent) as url:
                    report = await run_http_agent(url, run_input)
            accepted(report)
            got += [json.loads(m["content"]) for m in report["messages"] if m["role"] == "tool"]
        shown.append(got)
    assert (
        shown[0]
        == shown[1]
        == [
            {"result": {"city": "Seoul", "celsius": 21.5, "sky": "clear"}},
            {"result": {"city": "Busan", "days": ["sun", "rain"]}},
        ]
    )
