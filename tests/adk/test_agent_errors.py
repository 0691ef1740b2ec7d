"""A model that fails ends the run with AGENT_ERROR; the thread and connection survive."""

from __future__ import annotations

from collections.abc import AsyncGenerator

from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse

from gateway.examples.navigator.scripted import ScriptedLlm
from tests.conftest import running_gateway
from tests.support.agui import new_id, outcome, text_of, user_input


class FlakyLlm(ScriptedLlm):
    """Scripted, except that it raises when the user says 'explode'."""

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        last = llm_request.contents[-1].parts or []
        if any(part.text == "explode" for part in last):
            raise ConnectionError("model endpoint unreachable")
        async for response in super().generate_content_async(llm_request, stream):
            yield response


async def test_model_failure_is_agent_error_and_the_thread_goes_on() -> None:
    async with running_gateway(model=FlakyLlm()) as gateway, gateway.socket() as ws:
        thread = new_id("t")
        events = await ws.run(user_input(thread, "explode"))
        assert [e["type"] for e in events] == ["RUN_STARTED", "RUN_ERROR"]
        assert events[-1]["code"] == "AGENT_ERROR"
        # The client gets an error id to quote, never the exception's text.
        assert "error id" in events[-1]["message"]
        assert "unreachable" not in events[-1]["message"]
        assert "ConnectionError" not in events[-1]["message"]
        after = await ws.run(user_input(thread, "안녕"))
        assert outcome(after) == {"type": "success"}
        assert text_of(after).startswith("안녕하세요")
