"""A model that fails ends the run with AGENT_ERROR; the thread and connection survive."""

from __future__ import annotations

import pytest

from tests.support.agui import new_id, outcome, text_of, user_input
from tests.support.servers import running_gateway
from tests.support.speakers import FlakyLlm

pytestmark = pytest.mark.server


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
