"""Issue 11's restart: after poisoned inputs, damaged rows and a SIGKILL, the gateway comes back.

A real gateway process on a file takes the poisoning inputs of issue 11 (a ``navigateToScreen``
result nested 200 deep, a 5,000-digit number in a tool result), has undecodable rows planted
in its file for other threads (one of them with a run open), and is killed with SIGKILL in
the middle of a reply on yet another thread. Before this issue it could not start again.
Now it starts, serves a full flagship turn, closes the interrupted run, and tells the
owner of each damaged thread, with a coded error, that the thread was set aside.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from tests.support.agui import AgUiSocket, new_id, text_of, tool_answer, tool_calls, user_input
from tests.support.damage import (
    BAD_EVENT_DATA,
    BAD_MESSAGES,
    assert_quarantined,
    nested,
    plant_event,
    plant_messages,
)
from tests.support.flagship import FLAGSHIP
from tests.support.processes import gateway_process, operator_command, run_over_ws

pytestmark = pytest.mark.process

LONG_ANSWER = "자기소개를 길게 해 주세요"
CHUNKS_BEFORE_KILL = 8


async def browser_answers(port: int, thread: str, content: str) -> list[dict[str, Any]] | None:
    """The flagship turn on ``thread``, answered with ``content``; None if no answer came."""
    first = await run_over_ws(port, user_input(thread, FLAGSHIP))
    [navigate] = tool_calls(first, "navigateToScreen")
    frame = tool_answer(thread, [(navigate["id"], {})])
    frame["messages"][0]["content"] = content
    # Whatever the gateway makes of it, it must not take the process down; a connection it
    # leaves without an answer is not this test's concern.
    with contextlib.suppress(TimeoutError, ConnectionClosed):
        async with asyncio.timeout(5):
            return await run_over_ws(port, frame)
    return None


async def test_after_poison_damage_and_a_kill_the_gateway_restarts_and_serves(
    tmp_path: Path,
) -> None:
    db, log = tmp_path / "gateway.db", tmp_path / "gateway.log"
    nested_thread, digits_thread, cut_thread = new_id("nested"), new_id("digits"), new_id("cut")
    damaged = {f"damaged-{n}": new_id(f"d{n}") for n in range(5)}

    async with gateway_process(db, log) as (process, port):
        deep = json.dumps({"status": "navigated", "detail": nested(200)})
        nested_answer = await browser_answers(port, nested_thread, deep)
        huge = '{"status": "navigated", "count": ' + "9" * 5000 + "}"
        await browser_answers(port, digits_thread, huge)
        for thread in damaged.values():
            done = await run_over_ws(port, user_input(thread, "안녕"), user="carol")
            assert done[-1]["type"] == "RUN_FINISHED"

        async with connect(f"ws://127.0.0.1:{port}/ws?user=demo") as ws:
            cut = AgUiSocket(ws)
            await cut.send(user_input(cut_thread, LONG_ANSWER))
            chunks = 0
            while chunks < CHUNKS_BEFORE_KILL:
                event = await cut.next()
                assert event["type"] not in ("RUN_FINISHED", "RUN_ERROR"), event
                chunks += event["type"] == "TEXT_MESSAGE_CONTENT"
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=10)

    path = str(db)
    planted = list(damaged.values())
    plant_event(path, planted[0], BAD_EVENT_DATA["nested 300 deep"])
    plant_event(path, planted[1], BAD_EVENT_DATA["invalid JSON"])
    plant_event(path, planted[2], BAD_EVENT_DATA["a field of the wrong type"])
    plant_messages(path, planted[3], BAD_MESSAGES["invalid JSON"])
    # A run open on a damaged thread: crash recovery meets it first, and must pass it by.
    plant_event(path, planted[4], BAD_EVENT_DATA["nested 300 deep"], run_open=True)

    async with gateway_process(db, log) as (_, port):
        # Other threads are served: the whole flagship story on a new thread.
        story = new_id("story")
        first = await run_over_ws(port, user_input(story, FLAGSHIP))
        [navigate] = tool_calls(first, "navigateToScreen")
        answered = await run_over_ws(
            port, tool_answer(story, [(navigate["id"], {"status": "navigated"})])
        )
        assert "이동했습니다" in text_of(answered)

        # The run the kill cut off is closed, and its thread takes a new run.
        reattached = await run_over_ws(port, {"type": "reattach", "threadId": cut_thread})
        (snapshot,) = [e for e in reattached if e["type"] == "MESSAGES_SNAPSHOT"]
        assert snapshot["messages"][-1]["metadata"] == {"ended": "interrupted"}
        again = await run_over_ws(port, user_input(cut_thread, "고마워"))
        assert again[-1]["type"] == "RUN_FINISHED"

        # Each damaged thread is its owner's coded error, on a reattach (which reads both
        # the events and the messages) and from then on for a run as well.
        for thread in planted:
            reattach = await run_over_ws(port, {"type": "reattach", "threadId": thread}, "carol")
            assert_quarantined(reattach[-1], thread)
            ran = await run_over_ws(port, user_input(thread, "안녕"), user="carol")
            assert_quarantined(ran[-1], thread)
        nested_again = await run_over_ws(port, user_input(nested_thread, "고마워"))
        if nested_answer is not None and nested_answer[-1].get("code") == "VALIDATION_ERROR":
            assert nested_again[-1]["type"] == "RUN_FINISHED"  # refused at the door
        else:
            assert_quarantined(nested_again[-1], nested_thread)

        listing = await asyncio.to_thread(operator_command, db, "threads", "--quarantined")
        quarantined = {entry["threadId"] for entry in json.loads(listing.stdout)}
        assert set(planted) <= quarantined and story not in quarantined
    text = log.read_text()
    assert "stays open, since the thread is quarantined" in text and repr(planted[4]) in text
