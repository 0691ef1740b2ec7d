"""Two gateways of one cluster: a thread runs on one process at a time, whichever process an
input or a cancel reaches. An input on B for a thread whose run is on A follows the busy
policy as it would on A itself; a cancel sent to B stops A's run."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect

from tests.support.agui import (
    AgUiSocket,
    new_id,
    outcome,
    seq_of,
    snapshot_of,
    text_of,
    tool_answer,
    tool_calls,
    user_input,
)
from tests.support.flagship import FLAGSHIP
from tests.support.postgres import Postgres
from tests.support.processes import gateway_process
from tests.support.servers import RunningGateway, running_gateway

pytestmark = pytest.mark.process

LONG = "자기소개를 길게 해 주세요"
NAVIGATED = {"status": "navigated", "message": "ok"}


@pytest.fixture
async def pair(postgres: Postgres) -> AsyncIterator[tuple[RunningGateway, RunningGateway]]:
    """Two gateways on one fresh PostgreSQL database (so in one cluster), the scripted model
    at 20 ms a chunk."""
    url = postgres.fresh_database()
    async with (
        running_gateway(db=url, scripted_pace_ms=20, lease_check_seconds=0.2) as a,
        running_gateway(db=url, scripted_pace_ms=20, lease_check_seconds=0.2) as b,
    ):
        yield a, b


def asking(thread: str, text: str, busy: str | None = None) -> dict[str, Any]:
    run_input = user_input(thread, text)
    if busy is not None:
        run_input["forwardedProps"] = {"gateway": {"busy": busy}}
    return run_input


async def replying(ws: AgUiSocket, thread: str) -> list[dict[str, Any]]:
    """Sends a long request on ``ws`` and returns its events once its reply has begun."""
    await ws.send(asking(thread, LONG))
    events = []
    while not text_of(events):
        events.append(await ws.next())
    return events


async def test_an_input_on_another_process_is_refused_while_the_run_goes_on(pair):
    a, b = pair
    thread = new_id("t")
    async with a.socket() as on_a, b.socket() as on_b:
        first = await replying(on_a, thread)
        error = await on_b.refused(asking(thread, "안녕하세요", busy="reject"))
        assert error["code"] == "SESSION_BUSY"
        first += await on_a.until_end()
        assert outcome(first)["type"] == "success"
        # Once A's run is over, B runs the thread.
        assert outcome(await on_b.run(asking(thread, "안녕하세요", busy="reject")))["type"] == (
            "success"
        )


async def test_a_cancel_sent_to_another_process_stops_the_run(pair):
    a, b = pair
    thread = new_id("t")
    async with a.socket() as on_a, b.socket() as on_b:
        await replying(on_a, thread)
        await on_b.send({"type": "cancel", "threadId": thread})
        rest = await on_a.until_end(timeout=5)
        assert outcome(rest)["type"] == "cancelled"
        # Nothing was to be told on B: its connection sees no error.
        await asyncio.sleep(0.2)
        assert on_b.received == []


async def test_a_cancel_sent_to_another_process_stops_the_run_it_names_only(pair):
    a, b = pair
    thread = new_id("t")
    async with a.socket() as on_a, b.socket() as on_b:
        started = (await replying(on_a, thread))[0]
        await on_b.send({"type": "cancel", "threadId": thread, "runId": "an-earlier-run"})
        told = await on_b.until_end()
        assert [e["value"]["code"] for e in told if e["type"] == "CUSTOM"] == ["NOTHING_TO_CANCEL"]
        await on_b.send({"type": "cancel", "threadId": thread, "runId": started["runId"]})
        assert outcome(await on_a.until_end(timeout=5))["type"] == "cancelled"


async def test_a_cancel_of_another_users_run_reaches_nothing(pair):
    a, b = pair
    thread = new_id("t")
    async with a.socket() as on_a, b.socket(user="intruder") as on_b:
        await replying(on_a, thread)
        refused = await on_b.refused({"type": "cancel", "threadId": thread})
        assert refused["code"] == "ACCESS_DENIED"
        assert outcome(await on_a.until_end())["type"] == "success"


async def test_a_new_message_on_another_process_interrupts_the_run_and_runs(pair):
    a, b = pair
    thread = new_id("t")
    async with a.socket() as on_a, b.socket() as on_b:
        await replying(on_a, thread)
        started = asyncio.get_running_loop().time()
        second = await on_b.run(asking(thread, "안녕하세요"))
        assert outcome(await on_a.until_end(timeout=5))["type"] == "cancelled"
        assert outcome(second)["type"] == "success"
        assert text_of(second)
        assert asyncio.get_running_loop().time() - started < 5


async def test_an_enqueued_input_on_another_process_runs_after_the_run(pair):
    a, b = pair
    thread = new_id("t")
    async with a.socket() as on_a, b.socket() as on_b:
        await replying(on_a, thread)
        clock = asyncio.get_running_loop().time

        async def first_event() -> tuple[dict[str, Any], float]:
            return await on_b.next(), clock()

        await on_b.send(asking(thread, "안녕하세요", busy="enqueue"))
        # Admitted, it is started at once (docs/first-event.md), and waits its turn.
        assert (await on_b.next())["type"] == "RUN_STARTED"
        second = asyncio.create_task(first_event())
        first = await on_a.until_end()
        ended = clock()
        assert outcome(first)["type"] == "success"  # not stopped
        _, at = await second
        assert at >= ended  # it waited: ran only once A's run was over
        assert outcome(await on_b.until_end())["type"] == "success"


async def test_a_run_cut_off_by_its_process_stopping_is_closed_by_another(postgres: Postgres):
    url = postgres.fresh_database()
    thread = new_id("t")
    async with running_gateway(db=url, scripted_pace_ms=20, lease_check_seconds=0.2) as b:
        # A reply far longer than the stop's grace: the stop cuts it off.
        async with running_gateway(db=url, scripted_pace_ms=300) as a, a.socket() as on_a:
            seen = await replying(on_a, thread)
        cursor = seq_of(seen[-1])
        async with b.socket() as on_b:
            for event in seen:
                on_b.checker.feed(event)  # the same client, coming back through B
            await on_b.send({"type": "reattach", "threadId": thread, "after": cursor})
            tail = await on_b.until_end()
        # The stopped process logged the run's end; B took its lease over, closed the reply.
        assert tail[-1]["type"] == "RUN_ERROR"
        assert "marked interrupted" in tail[-1]["message"]
        async with b.socket() as on_b:
            for _ in range(100):
                snapshot = snapshot_of(await on_b.run({"type": "reattach", "threadId": thread}))
                if snapshot[-1].get("metadata") == {"ended": "interrupted"}:
                    break
                await asyncio.sleep(0.05)
        assert snapshot[-1].get("metadata") == {"ended": "interrupted"}


async def test_a_cancel_reaching_a_takeover_stops_the_reply_it_would_ask_for_again(
    postgres: Postgres,
):
    url = postgres.fresh_database()
    thread = new_id("t")
    async with running_gateway(db=url, scripted_pace_ms=20, lease_check_seconds=0.2) as b:
        # B's close of the cut-off run waits until the test lets it go on.
        hub = b.app.hub
        assert hub is not None
        closing, go_on = asyncio.Event(), asyncio.Event()
        close_cut_off = hub.engine.close_cut_off

        async def held_close(thread_id: str) -> bool:
            closing.set()
            await go_on.wait()
            return await close_cut_off(thread_id)

        hub.engine.close_cut_off = held_close  # type: ignore[method-assign]
        # A stops mid-reply after the browser's answer reached the model: a takeover would
        # ask the model again for that reply.
        slow = running_gateway(db=url, scripted_pace_ms=1000, warm_up_runs=0)
        async with slow as a, a.socket() as on_a:
            first = await on_a.run(user_input(thread, FLAGSHIP))
            [navigate] = tool_calls(first, "navigateToScreen")
            await on_a.send(tool_answer(thread, [(navigate["id"], NAVIGATED)]))
            seen = []
            while not text_of(seen):
                seen.append(await on_a.next())
        await asyncio.wait_for(closing.wait(), 10)
        async with b.socket() as on_b:
            await on_b.send({"type": "cancel", "threadId": thread})
            for _ in range(100):  # the cancel goes round through PostgreSQL to B itself
                if thread in hub.takeovers.stopped:
                    break
                await asyncio.sleep(0.05)
            go_on.set()
            for event in first + seen:
                on_b.checker.feed(event)  # the same client, coming back through B
            await on_b.send({"type": "reattach", "threadId": thread, "after": seq_of(seen[-1])})
            tail = await on_b.until_end()
            assert tail[-1]["type"] == "RUN_ERROR"
            # The reply is not asked for again: nothing more comes on the thread.
            with pytest.raises(TimeoutError):
                await on_b.next(timeout=1)
            again = await on_b.run(user_input(thread, "안녕하세요"))
            assert outcome(again)["type"] == "success"


async def test_a_message_that_takes_a_killed_processs_thread_waits_for_the_reply_it_owed(
    postgres: Postgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A process is killed after the browser's answer reached its model and before the
    reply; the user's next message reaches another process before that process's sweep
    does. The reply the model owed comes first, then the message's own: nothing the killed
    process was answering is lost under the new turn (an approval answered there is resumed
    the same way: ``Hub.finish_cut_off``)."""
    url = postgres.fresh_database()
    thread = new_id("t")
    monkeypatch.setenv("GATEWAY_LEASE_SECONDS", "1")
    # B's sweep looks rarely: the message, not the sweep, finds the dead process's lease.
    async with (
        running_gateway(db=url, scripted_pace_ms=20, lease_check_seconds=60) as b,
        gateway_process(url, tmp_path / "a.log", pace_ms=1000) as (a, port),
    ):
        async with connect(f"ws://127.0.0.1:{port}/ws?user=demo") as raw:
            on_a = AgUiSocket(raw)
            first = await on_a.run(user_input(thread, FLAGSHIP))
            [navigate] = tool_calls(first, "navigateToScreen")
            await on_a.send(tool_answer(thread, [(navigate["id"], NAVIGATED)]))
            seen = []
            while not text_of(seen):
                seen.append(await on_a.next())
            a.kill()
            a.wait()
        async with b.socket() as on_b:
            for _ in range(100):  # until A's lease has run out
                hello = await on_b.run(asking(thread, "안녕하세요", busy="enqueue"))
                if outcome(hello)["type"] == "success":
                    break
                await asyncio.sleep(0.1)
            assert outcome(hello)["type"] == "success", hello
            messages = snapshot_of(await on_b.run({"type": "reattach", "threadId": thread}))
    said = [m["content"] for m in messages if m["role"] == "assistant" and m.get("content")]
    # The owed reply (about the screen it opened) comes before the greeting's answer.
    assert len(said) >= 2 and said[-1].startswith("안녕하세요"), said
    assert "MNU-3120" in said[-2] or "업무 요청" in said[-2], said
