"""A reattach by cursor that missed nothing offers the browser calls the thread still waits on.

A tab that saw a run end waiting on its call answers it; the answer's early RUN_STARTED
carries no number (docs/first-event.md), so if the gateway dies before anything of that
run is stored, the tab comes back with the number of the run's end, and the log has
nothing after it. The thread still waits on the call (no answer was stored), so the
``UP_TO_DATE`` answer says so in its RUN_FINISHED (``pendingToolCallIds``), as a snapshot
would: the tab sends its kept answer again, and it is taken once. A call whose answer is
stored is never offered again.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect

from gateway import wire as p
from gateway.hub.eventlog import ended_waiting
from gateway.store.frames import FrameLog, LoggedFrame
from tests.support.agui import (
    AgUiSocket,
    new_id,
    outcome,
    seq_of,
    text_of,
    tool_answer,
    tool_calls,
    user_input,
)
from tests.support.backends import logged
from tests.support.flagship import FLAGSHIP, MOVED
from tests.support.held_store import write_lock_held
from tests.support.processes import gateway_process
from tests.support.servers import RunningGateway

pytestmark = pytest.mark.server

NAVIGATED = {"status": "navigated"}


def notice_code(events: list[dict[str, Any]]) -> str | None:
    codes = [e["value"]["code"] for e in events if e.get("name") == "gateway.notice"]
    return codes[0] if codes else None


def log_ending(*events: p.Event) -> FrameLog:
    frames = [LoggedFrame(seq, p.encode(e), None, None) for seq, e in enumerate(events, 1)]
    return FrameLog(frames, 1 if frames else None, len(frames))


START = p.RunStarted(thread_id="t", run_id="r", protocol_version=p.PROTOCOL_VERSION)


@pytest.mark.parametrize(
    ("end", "waits"),
    [
        (p.RunFinished(thread_id="t", run_id="r", outcome=p.SuccessOutcome()), False),
        (
            p.RunFinished(
                thread_id="t", run_id="r", outcome=p.SuccessOutcome(pending_tool_call_ids=["c1"])
            ),
            True,
        ),
        (
            p.RunFinished(
                thread_id="t",
                run_id="r",
                outcome=p.InterruptOutcome(interrupts=[p.Interrupt(id="c1", reason="approval")]),
            ),
            True,
        ),
        (p.RunError(message="cut off", code="RUN_INTERRUPTED"), True),
    ],
    ids=["done", "browser call", "approval", "error"],
)
def test_only_a_run_that_ended_waiting_makes_an_up_to_date_reattach_read_the_thread(
    end: p.Event, waits: bool
) -> None:
    assert ended_waiting(log_ending(START, end)) is waits
    assert not ended_waiting(log_ending())


async def test_an_up_to_date_reattach_offers_the_open_call_and_not_an_answered_one(
    gateway: RunningGateway,
) -> None:
    thread = new_id("t")
    async with gateway.socket(query="&clientId=tab-1") as ws:
        asked = await ws.run(user_input(thread, FLAGSHIP))
    [navigate] = tool_calls(asked, "navigateToScreen")
    cursor = seq_of(asked[-1])
    assert cursor is not None

    async with gateway.socket(query="&clientId=tab-1") as again:
        events = await again.run({"type": "reattach", "threadId": thread, "after": cursor})
        assert notice_code(events) == "UP_TO_DATE"
        assert outcome(events)["pendingToolCallIds"] == [navigate["id"]]
        answered = await again.run(tool_answer(thread, [(navigate["id"], NAVIGATED)]))
    assert MOVED in text_of(answered)
    assert outcome(answered) == {"type": "success"}

    async with gateway.socket(query="&clientId=tab-1") as later:
        end = seq_of(answered[-1])
        events = await later.run({"type": "reattach", "threadId": thread, "after": end})
    assert notice_code(events) == "UP_TO_DATE"
    assert outcome(events) == {"type": "success"}, "an answered call is offered again"


@pytest.mark.process
@pytest.mark.parametrize("workers", ["0", "2"], ids=["one process", "two workers"])
async def test_an_answer_a_kill_caught_before_its_commit_is_asked_for_again_and_taken_once(
    tmp_path: Path, workers: str
) -> None:
    db, log = tmp_path / "threads.db", tmp_path / "gateway.log"
    thread = new_id("t")
    url = "ws://127.0.0.1:{}/ws?user=demo&clientId=tab-1"
    env = {"GATEWAY_WORKERS": workers}
    async with (
        gateway_process(db, log, pace_ms=0, environment=env) as (process, port),
        connect(url.format(port)) as raw,
    ):
        ws = AgUiSocket(raw)
        asked = await ws.run(user_input(thread, FLAGSHIP))
        [navigate] = tool_calls(asked, "navigateToScreen")
        cursor = seq_of(asked[-1])
        assert cursor is not None
        await logged(str(db), thread, cursor)
        # Answered once the thread is idle (its run let go, which a worker's run may do a
        # moment after its RUN_FINISHED went out): then the answer's RUN_STARTED goes out
        # as soon as it is admitted, before its commit.
        await ws.run({"type": "reattach", "threadId": thread})
        # Another connection takes the file's write lock: nothing of the answer's run is
        # stored before the kill.
        with write_lock_held(str(db)):
            await ws.send(tool_answer(thread, [(navigate["id"], NAVIGATED)]))
            started = await ws.next()
            assert started["type"] == "RUN_STARTED" and seq_of(started) is None
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=10)

    async with (
        gateway_process(db, log, pace_ms=0, environment=env) as (_, port),
        connect(url.format(port)) as raw,
    ):
        ws = AgUiSocket(raw)
        events = await ws.run({"type": "reattach", "threadId": thread, "after": cursor})
        assert outcome(events)["pendingToolCallIds"] == [navigate["id"]], events
        # The tab sends the answer it kept, again: the thread takes it, and goes on.
        answered = await ws.run(tool_answer(thread, [(navigate["id"], NAVIGATED)]))
        assert MOVED in text_of(answered)
        assert outcome(answered) == {"type": "success"}
    with contextlib.closing(sqlite3.connect(db)) as stored:
        answers = [
            response
            for (data,) in stored.execute("SELECT data FROM events")
            for part in (json.loads(data).get("content") or {}).get("parts") or []
            if (response := part.get("function_response") or part.get("functionResponse"))
            and response.get("id") == navigate["id"]
        ]
    assert len(answers) == 1, answers
