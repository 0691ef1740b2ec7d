"""A server tool's result that is not JSON text (bytes, an image part, a file, a very large
value, a value JSON cannot hold) reaches the client as AG-UI 1.0 content parts or a bounded
preview, the same live and in snapshots, and never as a crash."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.translate.tool_results import MAX_TEXT_BYTES
from tests.support.agui import new_id, outcome, text_of, user_input
from tests.support.servers import post_run, running_gateway
from tests.support.speakers import of_type
from tests.support.tool_results import CASES, PNG, agent

pytestmark = pytest.mark.server


def dump() -> str:
    """Returns a very large value."""
    return "가" * MAX_TEXT_BYTES  # three bytes each in UTF-8


@pytest.mark.parametrize(("tool", "shown"), CASES, ids=[c[0].__name__ for c in CASES])
async def test_a_result_json_cannot_carry_reaches_the_client_as_parts(
    tool: Any, shown: Any
) -> None:
    assert len(PNG) == 70
    thread = new_id("t")
    async with running_gateway(agent=agent(tool)) as gateway:
        async with gateway.socket() as ws:
            events = await ws.run(user_input(thread, "go", tools=[]))
            [result] = of_type(events, "TOOL_CALL_RESULT")
            assert result["content"] == shown
            assert text_of(events) == "done"
            await ws.send({"type": "reattach", "threadId": thread})
            messages = (await ws.until_end())[1]["messages"]
            [stored] = [m for m in messages if m["role"] == "tool"]
            assert stored["content"] == shown and stored["id"] == result["messageId"]
        status, _, events, _ = await post_run(gateway, user_input(new_id("t"), "go", tools=[]))
        assert status == 200 and outcome(events)["type"] == "success"
        assert of_type(events, "TOOL_CALL_RESULT")[0]["content"] == shown


async def test_a_very_large_result_is_shown_as_a_bounded_preview() -> None:
    async with running_gateway(agent=agent(dump)) as gateway, gateway.socket() as ws:
        events = await ws.run(user_input(new_id("t"), "go", tools=[]))
    [result] = of_type(events, "TOOL_CALL_RESULT")
    content = result["content"]
    whole = json.dumps({"result": "가" * MAX_TEXT_BYTES}, ensure_ascii=False, separators=(",", ":"))
    preview, note = content.rsplit("\n", 1)
    assert whole.startswith(preview) and len(preview.encode()) <= MAX_TEXT_BYTES
    left_out = len(whole.encode()) - len(preview.encode())
    assert note == f"[… {left_out} more bytes not shown here; the model got the whole result]"
    assert text_of(events) == "done"
