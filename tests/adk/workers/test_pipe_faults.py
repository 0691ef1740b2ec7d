"""One message a worker sends that the main process cannot take (an event it cannot parse,
a failure code it does not know, an event called stored when none was, an audit row it
cannot read) ends at most the run it belongs to: the worker, its pipe and its other runs go
on. The worker here is this test, speaking the worker's side of the pipe over the pool's own
socket, so that it can send what a real worker would only send by a bug."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncGenerator
from typing import Any, cast

import pytest
from google.adk.events import Event as AdkEvent
from google.adk.sessions import Session
from google.genai import types

from gateway.adk.workers import RemoteFailure, WorkerPool, WorkerRun
from gateway.adk.workers.channel import Channel, ChannelClosed
from gateway.adk.workers.messages import (
    Audited,
    Finished,
    FromMain,
    Hello,
    Start,
    Streamed,
    Yielded,
)
from tests.support.budgets import eventually
from tests.support.scripted_worker import WAIT, Audit, ScriptedWorker, pool_of_one

pytestmark = pytest.mark.server


def said(text: str) -> bytes:
    content = types.Content(role="model", parts=[types.Part(text=text)])
    event = AdkEvent(author="agent", invocation_id="i-1", content=content, partial=True)
    return event.model_dump_json(exclude_none=True, by_alias=True).encode()


def order(run_id: str) -> WorkerRun:
    return WorkerRun(
        user_id="u",
        thread_id=f"t-{run_id}",
        session=Session(app_name="app", user_id="u", id=f"t-{run_id}"),
        message=None,
        invocation_id="i-1",
        state_delta=None,
        metadata={"runId": run_id},
        client_tools={},
    )


async def started(
    pool: WorkerPool, worker: ScriptedWorker, run_id: str
) -> tuple[AsyncGenerator[AdkEvent, None], Start]:
    events = pool.run(order(run_id), None)
    first = asyncio.ensure_future(anext(events))  # sends the run's Start
    start = await asyncio.wait_for(worker.started.get(), WAIT)
    assert start.metadata["runId"] == run_id
    return _resumed(first, events), start


async def _resumed(
    first: asyncio.Future[AdkEvent], rest: AsyncGenerator[AdkEvent, None]
) -> AsyncGenerator[AdkEvent, None]:
    yield await first
    async for event in rest:
        yield event


async def test_an_event_the_main_process_cannot_parse_ends_its_run_alone(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    async with pool_of_one() as (pool, worker, _):
        kept, kept_start = await started(pool, worker, "kept")
        broken, broken_start = await started(pool, worker, "broken")
        worker.send(Yielded(kept_start.run, said("안녕")))
        assert (await asyncio.wait_for(anext(kept), WAIT)).content is not None

        worker.send(Yielded(broken_start.run, b'{"author": "agent", "content": {"parts": 7'))
        with pytest.raises(RemoteFailure):
            await asyncio.wait_for(anext(broken), WAIT)
        # The worker is told to stop that run, and what it sends of it later is dropped.
        await eventually(
            lambda: worker.stopped == [broken_start.run], 5.0, what="the run was not stopped"
        )
        worker.send(Yielded(broken_start.run, said("늦게")), Finished(broken_start.run))

        # The other run, on the same worker and pipe, goes on to its end.
        worker.send(Yielded(kept_start.run, said("하세요")), Finished(kept_start.run))
        rest = [event async for event in kept]
        assert [part.text for e in rest if e.content for part in e.content.parts or ()] == [
            "하세요"
        ]
        assert worker.spawned == 1 and worker.is_alive() and pool.pids() == [os.getpid()]
    [line] = [r for r in caplog.records if "could not take" in r.getMessage()]
    assert "run broken ends with the agent's error" in line.getMessage() and line.exc_info


async def test_a_chunk_sent_as_its_text_before_any_whole_ends_its_run_alone() -> None:
    """A ``Streamed`` chunk is made from the run's last chunk sent whole: with none, the
    run ends as if its invocation had raised; the other runs go on, and a run's chunks
    after a whole one are made from it (``gateway.adk.workers.chunks``)."""
    async with pool_of_one() as (pool, worker, _):
        kept, kept_start = await started(pool, worker, "kept")
        broken, broken_start = await started(pool, worker, "broken")
        worker.send(Streamed(broken_start.run, "없는", "e-1", 1.0))
        with pytest.raises(RemoteFailure):
            await asyncio.wait_for(anext(broken), WAIT)
        worker.send(
            Yielded(kept_start.run, said("안녕")), Streamed(kept_start.run, "하세요", "e-2", 2.0)
        )
        worker.send(Finished(kept_start.run))
        events = [event async for event in kept]
        assert [e.content.parts[0].text for e in events if e.content and e.content.parts] == [
            "안녕",
            "하세요",
        ]
        assert (events[1].id, events[1].timestamp, events[1].author) == ("e-2", 2.0, "agent")
        assert worker.spawned == 1


async def test_a_failure_code_the_main_process_does_not_know_ends_its_run_alone() -> None:
    async with pool_of_one() as (pool, worker, _):
        kept, kept_start = await started(pool, worker, "kept")
        broken, broken_start = await started(pool, worker, "broken")
        failure = ("NOT_A_CODE", "The model failed.", "detail", "model")
        worker.send(Yielded(broken_start.run, said("안녕"), failure=failure))
        with pytest.raises(RemoteFailure):
            await asyncio.wait_for(anext(broken), WAIT)
        worker.send(Yielded(kept_start.run, said("안녕")), Finished(kept_start.run))
        assert len([event async for event in kept]) == 1
        assert worker.spawned == 1


async def test_an_audit_row_the_main_process_cannot_read_is_dropped_and_the_runs_go_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    async with pool_of_one() as (pool, worker, audit):
        kept, kept_start = await started(pool, worker, "kept")
        worker.send(Audited(["not", "a", "row"]))
        worker.send(Yielded(kept_start.run, said("안녕")), Finished(kept_start.run))
        assert len([event async for event in kept]) == 1
        assert worker.spawned == 1 and audit.records == []
    [line] = [r for r in caplog.records if "could not take" in r.getMessage()]
    assert "Audited" in line.getMessage() and "dropped" in line.getMessage()


async def test_an_event_called_stored_when_nothing_was_stored_ends_its_run_alone() -> None:
    async with pool_of_one() as (pool, worker, _):
        kept, kept_start = await started(pool, worker, "kept")
        broken, broken_start = await started(pool, worker, "broken")
        worker.send(Yielded(broken_start.run, stored=True))  # no Append of it came first
        with pytest.raises(RemoteFailure):
            await asyncio.wait_for(anext(broken), WAIT)
        await eventually(
            lambda: worker.stopped == [broken_start.run], 5.0, what="the run was not stopped"
        )
        worker.send(Yielded(kept_start.run, said("안녕")), Finished(kept_start.run))
        assert len([event async for event in kept]) == 1
        assert worker.spawned == 1


class AfterAStranger(ScriptedWorker):
    """A stand-in whose place is first claimed by another process (one given up for being
    slow, connecting while its replacement starts): its Hello names the place, not its pid."""

    def __init__(self) -> None:
        super().__init__()
        self.stranger_heard: list[str] = []

    async def _serve(self, path: str, index: int) -> None:
        reader, writer = await asyncio.open_unix_connection(path)
        stranger: Channel[FromMain] = Channel(reader, writer, FromMain)
        stranger.send(Hello(index, os.getpid() + 1))
        try:
            self.stranger_heard.append(type(await stranger.receive()).__name__)
        except ChannelClosed:
            self.stranger_heard.append("closed")
        await super()._serve(path, index)


async def test_a_hello_from_a_process_not_started_for_its_place_is_refused(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    worker = AfterAStranger()
    pool = WorkerPool(1, worker, cast(Any, None), audit=Audit())
    try:
        await asyncio.wait_for(pool.start(), WAIT)
        # The run goes to the process started for the place, not to the stranger.
        run, start = await started(pool, worker, "r")
        worker.send(Yielded(start.run, said("안녕")), Finished(start.run))
        assert len([event async for event in run]) == 1
    finally:
        await pool.close()
    assert worker.stranger_heard == ["closed"]
    [line] = [r.getMessage() for r in caplog.records if "no worker of ours" in r.getMessage()]
    assert f"pid {os.getpid() + 1} said Hello as worker 1" in line
    assert f"started as pid {os.getpid()}" in line
