"""With ``GATEWAY_TIMELINE`` a run's steps are marked in every process it crosses, on one
clock: the reply of the flagship story, run in a worker, shows each step from its frame read
to its first text written, in the order the text took them (docs/first-event.md)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gateway import timeline
from tests.support.agui import new_id, text_of, tool_answer, tool_calls, user_input
from tests.support.flagship import FLAGSHIP, MOVED
from tests.support.servers import running_gateway

pytestmark = pytest.mark.server

# The first text's way through a worker, in order.
WAY = [
    "read",
    "admitted",
    "claimed",
    "driven",
    "start_sent",
    "worker_read",
    "worker_began",
    "model_called",
    "model_woke",
    "model_chunk",
    "chunk_sent",
    "chunk_read",
    "taken",
    "emitted",
    "written",
]


async def test_a_replys_steps_are_marked_in_order_across_the_worker(tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    try:
        async with running_gateway(
            workers=2, db=str(tmp_path / "threads.db"), timeline=str(marks)
        ) as gateway:
            thread = new_id("t")
            async with gateway.socket() as ws:
                first = await ws.run(user_input(thread, FLAGSHIP))
                [navigate] = tool_calls(first, "navigateToScreen")
                answer = tool_answer(thread, [(navigate["id"], {"status": "navigated"})])
                await ws.send(answer)
                while (await ws.next())["type"] != "TEXT_MESSAGE_CONTENT":
                    pass
                read = time.monotonic()  # the client has the first text
                reply = await ws.until_end()
            assert text_of(ws.received[-len(reply) - 1 :]) == MOVED
    finally:
        timeline.stop()  # the main process's marks (this one's), and no more
    files = sorted(path.name.split("-")[0] for path in marks.iterdir())
    assert files == ["main", "worker", "worker"]
    steps = timeline.read(str(marks))[answer["runId"]]
    assert [step for step in WAY if step in steps] == WAY, sorted(steps)
    times = [steps[step] for step in WAY]
    assert times == sorted(times), dict(zip(WAY, times, strict=True))
    # Beside the way: the early RUN_STARTED written, the input's commit; not run here.
    assert {"acknowledged", "input_committed"} <= set(steps)
    assert "local" not in steps
    # Its first text, not a later chunk, is the one marked written: before the client had it.
    assert steps["written"] <= read
    # The worker counted what its steps were made of (gateway.adk.workers.first_turn).
    for step in ("worker_began", "model_called", "chunk_sent"):
        names = ("own", "callbacks", "waited_for_cpu", "reader", "reader_cpu", "=runs")
        counted = {f"{step}/{name}" for name in names}
        assert counted <= set(steps), sorted(steps)
    assert {"model_called/asked", "chunk_sent/waited_for_main"} <= set(steps)  # once held
    # The main process counted its placing and where its first event was in its read: the
    # reply went to the worker keeping its thread, without the first run's events, alone.
    assert steps["start_sent/=kept"] > 0
    assert steps["start_sent/=runs"] == steps["start_sent/=starting"] == 0
    assert steps["start_sent/=least"] == steps["start_sent/=least_starting"] == 0
    assert 0 <= steps["chunk_read/=before"] < steps["chunk_read/=read"]
    assert steps["chunk_read/=resent"] == 0
    own = steps["model_called/own"] - steps["worker_began/own"]
    assert own >= 1  # ADK's steps of the run's own, from its start to the model call
    assert steps["model_called/callbacks"] - steps["worker_began/callbacks"] >= own
    # The pipe's reader ran before the run began (it read the run's Start): counted apart.
    assert steps["worker_began/reader"] >= 1
