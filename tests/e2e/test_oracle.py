"""ag-ui-adk beside the gateway: the same agent, the same offline model, the same official
client; where the two should agree, they do (tests/support/agui_adk.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from google.adk.agents import LlmAgent

from gateway.models.script import ScriptLlm
from tests.support.agui import new_id
from tests.support.agui_adk import running_agui_adk
from tests.support.official_client import NEEDS_NODE, accepted, base_input, run_http_agent
from tests.support.servers import running_gateway

pytestmark = [NEEDS_NODE, pytest.mark.browser]


def _chat_agent(tmp_path: Path) -> LlmAgent:
    script = tmp_path / "chat.json"
    script.write_text(json.dumps({"rules": [{"user": "hello", "say": "Hello from the script."}]}))
    return LlmAgent(name="chat", model=ScriptLlm.from_file(script), instruction="Be brief.")


async def test_a_plain_chat_reads_the_same_through_both(tmp_path: Path) -> None:
    replies = []
    for serve in ("gateway", "ag-ui-adk"):
        agent = _chat_agent(tmp_path)
        run_input = base_input(
            new_id("t"), [{"id": new_id("m"), "role": "user", "content": "hello"}]
        )
        run_input["tools"] = []
        if serve == "gateway":
            async with running_gateway(agent=agent) as gateway:
                report = await run_http_agent(gateway, run_input)
        else:
            async with running_agui_adk(agent) as url:
                report = await run_http_agent(url, run_input)
        accepted(report)
        replies.append([m["content"] for m in report["messages"] if m["role"] == "assistant"])
    assert replies[0] == replies[1] == ["Hello from the script."]
