"""An input sent twice runs once (``gateway.hub.dedupe``): a client cut off just after it
sent a RunAgentInput sends it again, with the same runId, once it has reconnected; the
thread runs that runId once, whether the first copy is still waiting for its thread, is
running, has run, or ran before a restart. The sender of the copy is told (RUN_DEDUPED) and
shown the thread as a reattach shows it. The same runId with another message is a new
input, and runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.agui import AgUiSocket, new_id, outcome, text_of, user_input
from tests.support.budgets import eventually
from tests.support.dedupe import ran_once, stored, told_deduped
from tests.support.first_events import LONG, held_reads, replied
from tests.support.servers import RunningGateway, post_run, running_gateway

pytestmark = pytest.mark.server


def runs(gateway: RunningGateway, thread: str) -> bool:
    """Whether a run of the thread has claimed it."""
    known = gateway.app.hub.threads.get(thread)  # type: ignore[union-attr]
    return known is not None and known.run is not None


async def sent_again(ws: AgUiSocket, asked: dict[str, Any]) -> list[dict[str, Any]]:
    """Sends ``asked`` again; returns what the reattach that follows the notice showed."""
    told = await ws.run(asked)
    told_deduped(told, asked["runId"])
    return await ws.until_end()


async def test_an_input_sent_twice_on_one_connection_runs_once() -> None:
    async with running_gateway() as gateway, gateway.socket() as ws:
        thread = new_id("t")
        asked = user_input(thread, "안녕")
        first = await ws.run(asked)
        assert outcome(first) == {"type": "success"} and text_of(first)
        shown = await sent_again(ws, asked)
        assert text_of(first) in replied(shown)
        ran_once(await stored(gateway, thread), asked)


async def test_an_input_sent_again_while_it_waits_for_its_thread_runs_once() -> None:
    # The first copy is admitted (its RUN_STARTED out) and waits for its thread's read;
    # its connection drops, and the copy sent on the next connection finds it there.
    async with held_reads() as (gateway, reads):
        thread = new_id("t")
        asked = user_input(thread, "안녕")
        async with gateway.socket() as first:
            await first.send(asked)
            assert (await first.next())["runId"] == asked["runId"]
        async with gateway.socket() as second:
            await second.send(asked)
            told = await second.until_end()
            told_deduped(told, asked["runId"])
            reads.let_go.set()
            joined = await second.until_end()
        assert joined[0]["type"] == "RUN_STARTED" and joined[0]["runId"] == asked["runId"]
        assert outcome(joined) == {"type": "success"} and "안녕하세요" in replied(joined)
        assert reads.done == 1  # one run read its thread
        ran_once(await stored(gateway, thread), asked)


async def test_an_input_sent_again_while_it_runs_joins_its_run_and_does_not_stop_it() -> None:
    async with running_gateway(scripted_pace_ms=20) as gateway:
        thread = new_id("t")
        asked = user_input(thread, LONG)
        async with gateway.socket() as first:
            await first.send(asked)
            assert (await first.next())["type"] == "RUN_STARTED"
            await eventually(lambda: runs(gateway, thread), 5, what="the run claims its thread")
        # A new message would stop the run (the default busy policy); its copy must not.
        async with gateway.socket() as second:
            await second.send(asked)
            told_deduped(await second.until_end(), asked["runId"])
            joined = await second.until_end()
        assert joined[0]["runId"] == asked["runId"]
        assert outcome(joined) == {"type": "success"}
        ran_once(await stored(gateway, thread), asked)


# The run found in the thread its claim read (its window holds the whole thread), or, with
# a window of 2 events, through the store's index.
@pytest.mark.parametrize("window", [24, 2])
async def test_an_input_sent_again_after_a_restart_is_not_run_again(
    tmp_path: Path, window: int
) -> None:
    db = str(tmp_path / "threads.db")
    thread = new_id("t")
    asked = user_input(thread, "안녕")
    async with running_gateway(db=db) as gateway, gateway.socket() as ws:
        first = await ws.run(asked)
        assert outcome(first) == {"type": "success"}
        # Later turns: the run sent again is not among the thread's newest events.
        assert outcome(await ws.run(user_input(thread, "고마워"))) == {"type": "success"}
    async with running_gateway(db=db, history_window=window) as gateway:
        async with gateway.socket() as ws:
            shown = await sent_again(ws, asked)
        assert text_of(first) in replied(shown)
        messages = await stored(gateway, thread)
        assert [m["content"] for m in messages if m["role"] == "user"] == ["안녕", "고마워"]
        assert len([m for m in messages if m["role"] == "assistant"]) == 2


async def test_the_same_run_id_with_another_message_is_a_new_input() -> None:
    """Not a copy: it runs, in memory and from the store alike (CopilotKit's useInterrupt
    resumes an interrupted run under that run's runId)."""
    async with running_gateway() as gateway:
        thread = new_id("t")
        asked = user_input(thread, "안녕")
        other = user_input(thread, "고마워") | {"runId": asked["runId"]}
        async with gateway.socket() as ws:
            assert outcome(await ws.run(asked)) == {"type": "success"}
            again = await ws.run(other)
            assert outcome(again) == {"type": "success"} and text_of(again)
            assert not [e for e in again if e["type"] == "CUSTOM"]
        # Once nothing of the thread is in memory, from the store: a third message too.
        threads = gateway.app.hub.threads  # type: ignore[union-attr]
        await eventually(lambda: thread not in threads, 5, what="the thread is let go")
        third = user_input(thread, "또 봐요") | {"runId": asked["runId"]}
        async with gateway.socket() as tab:
            ran = await tab.run(third)
        assert outcome(ran) == {"type": "success"} and text_of(ran)
        messages = await stored(gateway, thread)
        assert [m["content"] for m in messages if m["role"] == "user"] == [
            "안녕",
            "고마워",
            "또 봐요",
        ]


async def test_a_copy_sent_to_the_sse_door_is_told_and_not_run() -> None:
    async with running_gateway() as gateway:
        thread = new_id("t")
        asked = user_input(thread, "안녕")
        status, _, events, _ = await post_run(gateway, asked)
        assert status == 200 and outcome(events) == {"type": "success"}
        status, _, events, _ = await post_run(gateway, asked)
        assert status == 200
        told_deduped(events, asked["runId"])
        ran_once(await stored(gateway, thread), asked)
