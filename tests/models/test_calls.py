"""A run's model calls are watched at every streamed chunk for what little a chunk asks: when
its call last heard from its model. The run a call belongs to is read from the run's
metadata once, as the call begins, not at each of its ~30 chunks (docs/performance.md,
session 52); a call that goes quiet still stops the run (``test_failures``)."""

from __future__ import annotations

import pytest

from gateway.models import calls
from gateway.models.calls import ModelCalls
from tests.support.agui import new_id, outcome, user_input
from tests.support.counting import counting
from tests.support.servers import running_gateway

pytestmark = pytest.mark.server

EXPENSES = "gateway.examples.expenses.agent:root_agent"


async def test_a_streamed_chunk_is_heard_without_reading_its_runs_metadata(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Counted on the class before the gateway's plugins are built: its chain holds them.
    begun = counting(monkeypatch, ModelCalls, "before_model_callback")
    chunks = counting(monkeypatch, ModelCalls, "after_model_callback")
    async with (
        running_gateway(agent=EXPENSES, workers=0, scripted_pace_ms=0) as gateway,
        gateway.socket() as ws,
    ):
        read = counting(monkeypatch, calls, "_run_id")
        events = await ws.run(user_input(new_id("t"), "Show me my expenses"))
        watched = gateway.app.hub.engine.model_calls  # type: ignore[union-attr]
        assert watched is not None
        assert watched._heard_by == {} and watched._open == {}, "the run's calls are forgotten"
    assert outcome(events) == {"type": "success"}
    assert len(begun) == 2, "the tool's call, then the answer streamed from its result"
    assert len(chunks) > 20, "the answer came in chunks"
    # Each call's run is read as it begins and as its last response is counted, and once
    # as its tool starts and as its agent ends: never at a chunk.
    assert len(read) <= 3 * len(begun)
