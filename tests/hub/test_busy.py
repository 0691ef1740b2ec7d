"""A new message on a thread whose run is still going: ``busy`` (GATEWAY_BUSY, or
``forwardedProps.gateway.busy``) says whether it is refused, stops the run and runs, or
waits its turn. The default, interrupt, is what lets a user press Stop and type again."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from gateway.hub.busy import WAITING_PER_THREAD
from tests.support.agui import new_id, outcome, text_of, user_input
from tests.support.servers import RunningGateway, running_gateway

pytestmark = pytest.mark.server

LONG = "자기소개를 길게 해 주세요"
PACE_MS = 20


@pytest.fixture(scope="module")
async def paced() -> AsyncIterator[RunningGateway]:
    async with running_gateway(scripted_pace_ms=PACE_MS) as gateway:
        yield gateway


def asking(thread: str, text: str, busy: str | None = None) -> dict[str, Any]:
    run_input = user_input(thread, text)
    if busy is not None:
        run_input["forwardedProps"] = {"gateway": {"busy": busy}}
    return run_input


class Stream:
    """One POST /invocations read to its end in a task; ``replying`` is set once its
    reply's text has begun."""

    def __init__(self, gateway: RunningGateway, body: dict[str, Any]) -> None:
        self.events: list[dict[str, Any]] = []
        self.status = 0
        self.replying = asyncio.Event()
        self.task = asyncio.create_task(self._read(gateway, body))

    async def _read(self, gateway: RunningGateway, body: dict[str, Any]) -> None:
        async with (
            httpx.AsyncClient(timeout=30) as client,
            client.stream(
                "POST",
                gateway.http + "/invocations",
                content=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"},
            ) as response,
        ):
            self.status = response.status_code
            async for line in response.aiter_lines():
                if line.startswith("data: "):
                    self.events.append(json.loads(line.removeprefix("data: ")))
                    if text_of(self.events):
                        self.replying.set()

    async def done(self) -> list[dict[str, Any]]:
        await asyncio.wait_for(self.task, 30)
        return self.events


async def replying(gateway: RunningGateway, thread: str) -> Stream:
    first = Stream(gateway, asking(thread, LONG))
    await asyncio.wait_for(first.replying.wait(), 10)
    return first


async def stored(gateway: RunningGateway, thread: str) -> list[dict[str, Any]]:
    async with gateway.socket() as ws:
        events = await ws.run({"type": "reattach", "threadId": thread})
    [snapshot] = [e for e in events if e["type"] == "MESSAGES_SNAPSHOT"]
    messages: list[dict[str, Any]] = snapshot["messages"]
    return messages


async def test_a_new_message_stops_the_running_reply_and_runs(paced: RunningGateway) -> None:
    thread = new_id("t")
    first = await replying(paced, thread)
    second = await Stream(paced, asking(thread, "안녕")).done()
    cut = await first.done()
    assert outcome(cut) == {"type": "cancelled"}
    assert outcome(second) == {"type": "success"} and text_of(second).startswith("안녕하세요")
    # Its stream started once the stopped run had ended: one valid stream after another.
    assert second[0]["type"] == "RUN_STARTED"
    messages = await stored(paced, thread)
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    assert messages[1]["metadata"] == {"ended": "stopped"}
    assert messages[1]["content"].startswith(text_of(cut))


async def test_stop_then_a_new_message_works_even_before_the_abort_is_seen(
    paced: RunningGateway,
) -> None:
    thread = new_id("t")
    first = await replying(paced, thread)
    first.task.cancel()  # the browser's Stop aborts the fetch; the next message follows at once
    second = await Stream(paced, asking(thread, "안녕")).done()
    assert outcome(second) == {"type": "success"}


async def test_enqueue_waits_for_the_run_to_finish(paced: RunningGateway) -> None:
    thread = new_id("t")
    first = await replying(paced, thread)
    second = await Stream(paced, asking(thread, "안녕", busy="enqueue")).done()
    whole = await first.done()
    assert outcome(whole) == {"type": "success"}
    assert outcome(second) == {"type": "success"}
    messages = await stored(paced, thread)
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    assert "metadata" not in messages[1] and messages[1]["content"] == text_of(whole)


async def test_only_a_few_inputs_may_wait_and_they_run_in_order(paced: RunningGateway) -> None:
    thread = new_id("t")
    first = await replying(paced, thread)
    waiting = []
    for index in range(WAITING_PER_THREAD + 1):
        waiting.append(Stream(paced, asking(thread, f"안녕 {index}", busy="enqueue")))
        await asyncio.sleep(0.05)  # in this order
    *queued, refused = [await stream.done() for stream in waiting]
    assert waiting[-1].status == 409 and refused[0]["code"] == "SESSION_BUSY"
    assert "waiting" in refused[0]["message"]
    assert outcome(await first.done()) == {"type": "success"}
    assert all(outcome(events) == {"type": "success"} for events in queued)
    users = [m["content"] for m in await stored(paced, thread) if m["role"] == "user"]
    assert users == [LONG, *(f"안녕 {index}" for index in range(WAITING_PER_THREAD))]


async def test_a_waiting_input_whose_client_leaves_drops_out(paced: RunningGateway) -> None:
    thread = new_id("t")
    first = await replying(paced, thread)
    gone = Stream(paced, asking(thread, "안녕", busy="enqueue"))
    assert paced.app.hub is not None
    known = paced.app.hub.threads[thread]
    while not known.waiting:
        await asyncio.sleep(0.005)
    gone.task.cancel()
    async with asyncio.timeout(2):
        while known.waiting:
            await asyncio.sleep(0.005)
    assert outcome(await first.done()) == {"type": "success"}
    assert [m["role"] for m in await stored(paced, thread)] == ["user", "assistant"]


async def test_reject_refuses_at_once_as_a_setting() -> None:
    async with running_gateway(scripted_pace_ms=PACE_MS, busy="reject") as gateway:
        thread = new_id("t")
        first = await replying(gateway, thread)
        refused = Stream(gateway, asking(thread, "안녕"))
        [error] = await refused.done()
        assert refused.status == 409 and error["code"] == "SESSION_BUSY"
        # Still a request may ask for another policy.
        second = await Stream(gateway, asking(thread, "안녕", busy="enqueue")).done()
        assert outcome(second) == {"type": "success"}
        assert outcome(await first.done()) == {"type": "success"}


@pytest.mark.parametrize("busy", ["later", 1, ["reject"]])
async def test_an_unknown_busy_policy_is_a_validation_error(
    paced: RunningGateway, busy: Any
) -> None:
    stream = Stream(paced, asking(new_id("t"), "안녕", busy=busy))
    [error] = await stream.done()
    assert stream.status == 400 and error["code"] == "VALIDATION_ERROR"
    assert "forwardedProps.gateway.busy" in error["message"] and "'enqueue'" in error["message"]


async def test_on_the_websocket_another_tabs_message_interrupts(paced: RunningGateway) -> None:
    thread = new_id("t")
    async with paced.socket() as owner, paced.socket() as other:
        await owner.send(asking(thread, LONG))
        while (await owner.next())["type"] != "TEXT_MESSAGE_CONTENT":
            pass
        second = await other.run(asking(thread, "안녕"))
        cut = await owner.until_end()
        assert outcome(cut) == {"type": "cancelled"}
        assert outcome(second) == {"type": "success"}
        bad = await other.refused(asking(thread, "안녕", busy="never"))
        assert bad["type"] == "RUN_ERROR" and bad["code"] == "VALIDATION_ERROR"
