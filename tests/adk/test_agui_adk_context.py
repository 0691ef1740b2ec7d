"""The client's context where an agent written for ag-ui-adk looks for it:
``run_config.custom_metadata["ag_ui_context"]``, a list of ``{description, value}``, with
only the entries the operator allows (``GATEWAY_CONTEXT_ALLOW``), in a tool and a callback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.models.llm_request import LlmRequest
from google.adk.tools.tool_context import ToolContext

from gateway.models.script import ScriptLlm
from tests.support.agui import new_id, tool_result, user_input
from tests.support.servers import running_gateway

pytestmark = pytest.mark.server

SCRIPT = {"rules": [{"user": "peek", "call": {"name": "peek"}}, {"after": "peek", "say": "Seen."}]}


def peek(tool_context: ToolContext) -> dict[str, Any]:
    """Says what context the run was given."""
    assert tool_context.run_config is not None
    return {"seen": (tool_context.run_config.custom_metadata or {}).get("ag_ui_context")}


async def test_a_tool_and_a_callback_find_the_context_where_ag_ui_adk_puts_it(
    tmp_path: Path,
) -> None:
    script = tmp_path / "peek.json"
    script.write_text(json.dumps(SCRIPT))
    in_callbacks: list[Any] = []

    def before_model(callback_context: CallbackContext, llm_request: LlmRequest) -> None:
        in_callbacks.append(callback_context.custom_metadata.get("ag_ui_context"))

    agent = LlmAgent(
        name="peeker",
        model=ScriptLlm.from_file(script),
        tools=[peek],
        before_model_callback=before_model,
    )
    context = [
        {"description": "currentScreen", "value": "MNU-3120"},
        {"description": "secret", "value": "not for the model"},
    ]
    async with running_gateway(agent=agent) as gateway, gateway.socket() as ws:
        told = await ws.run(user_input(new_id("t"), "peek", tools=[], context=context))
        plain = await ws.run(user_input(new_id("t"), "peek", tools=[]))
    allowed = [{"description": "currentScreen", "value": "MNU-3120"}]
    assert tool_result(told, "peek") == {"seen": allowed}
    assert in_callbacks[0] == allowed
    assert tool_result(plain, "peek") == {"seen": None}  # as ag-ui-adk: no context, no key
