"""A worker's loop gives a run that has not sent its first event the first turn: its steps
run before the later steps of the runs already under way, and once its first event is
sent it waits its turn like them. Counted in steps, never timed."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import re
import tempfile
import threading
from collections.abc import AsyncGenerator, Callable, Coroutine
from typing import Any, TypeVar

import pytest
import uvloop
from google.adk.events import Event as AdkEvent
from google.adk.sessions import Session
from google.genai import types

from gateway.adk.workers import first_turn, worker
from gateway.adk.workers.channel import Channel
from gateway.adk.workers.first_turn import FirstTurnLoop, go_first, going_first
from gateway.adk.workers.messages import (
    Cancel,
    Finished,
    FromMain,
    FromWorker,
    Hello,
    Start,
    Streamed,
    Yielded,
)
from gateway.adk.workers.remote_session import RemoteSessions
from tests.support.budgets import scaled
from tests.support.counting import counting

# Runs under way on the worker, each ready for its next step every turn.
UNDER_WAY = 50
# Steps of the loop a starting run takes to its first event (ADK takes about a dozen).
STEPS = 10

T = TypeVar("T")


async def beside_runs_under_way(starting: Coroutine[Any, Any, T], taken: list[int]) -> T:
    """``starting``'s result, run in a task of its own while ``UNDER_WAY`` runs take a
    step every turn, each counted in ``taken[0]``."""
    stop = False

    async def under_way() -> None:
        while not stop:
            taken[0] += 1
            await asyncio.sleep(0)

    others = [asyncio.create_task(under_way()) for _ in range(UNDER_WAY)]
    await asyncio.sleep(0)
    try:
        return await asyncio.create_task(starting)
    finally:
        stop = True
        await asyncio.gather(*others)


async def steps_of_others() -> tuple[int, int]:
    """Steps the runs under way take while a new run takes ``STEPS`` steps to its first
    event, and while it takes as many more after it."""
    taken = [0]

    async def starting() -> tuple[int, int]:
        mark = go_first()
        before = taken[0]
        for _ in range(STEPS):
            await asyncio.sleep(0)
        to_first_event = taken[0] - before
        mark.end()
        before = taken[0]
        for _ in range(STEPS):
            await asyncio.sleep(0)
        return to_first_event, taken[0] - before

    return await beside_runs_under_way(starting(), taken)


def on(
    loop_factory: Callable[[], asyncio.AbstractEventLoop],
    scenario: Callable[[], Coroutine[Any, Any, T]],
) -> T:
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        return runner.run(scenario())


@pytest.mark.unit
def test_a_starting_run_goes_before_the_later_steps_of_runs_under_way() -> None:
    to_first_event, after_it = on(FirstTurnLoop, steps_of_others)
    assert to_first_event == 0  # its steps chain through, none of the others' in between
    assert after_it >= (STEPS - 1) * UNDER_WAY  # then it waits its turn behind each of them


@pytest.mark.unit
@pytest.mark.parametrize("loop_factory", [asyncio.SelectorEventLoop, uvloop.new_event_loop])
def test_on_a_loop_of_its_own_each_step_of_a_start_waits_behind_every_run(
    loop_factory: Callable[[], asyncio.AbstractEventLoop],
) -> None:
    # What the worker's loop changes: first come, first served, a turn a step (uvloop's
    # too, which one process serves on).
    to_first_event, _ = on(loop_factory, steps_of_others)
    assert to_first_event >= (STEPS - 1) * UNDER_WAY


@pytest.mark.unit
def test_what_goes_first_is_decided_by_the_callback_s_context() -> None:
    loop = FirstTurnLoop()
    try:
        marked, ended = contextvars.copy_context(), contextvars.copy_context()
        marked.run(go_first)
        ended.run(lambda: go_first().end())
        order: list[str] = []
        loop.call_soon(order.append, "later 1")
        loop.call_soon(order.append, "ended", context=ended)
        skipped = loop.call_soon(order.append, "cancelled", context=marked)
        skipped.cancel()
        loop.call_at(loop.time(), order.append, "timer", context=marked)
        thread = threading.Thread(
            target=loop.call_soon_threadsafe, args=(order.append, "other thread"), kwargs={}
        )
        thread.start()
        thread.join()
        loop.call_soon(order.append, "first", context=marked)
        loop.run_until_complete(asyncio.sleep(0))
        # In the turn: what goes first in the order it came (the timer joins the turn's
        # callbacks after those scheduled before it), then the rest in theirs.
        assert order[:2] == ["first", "timer"]
        assert order[2:] == ["later 1", "ended", "other thread"]
        assert loop.went_first == 3  # the cancelled one went first too, and was skipped
    finally:
        loop.close()


@pytest.mark.unit
def test_a_step_is_scheduled_in_two_python_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    # asyncio's call_soon takes six (its checks, _call_soon, the handle's __init__ and its
    # get_debug, the queue's append); the worker's loop two: its call_soon, and the ready
    # queue's place, the one definition of the order (its append, for asyncio's other ways
    # in, places through it too).
    asyncio_s = [
        counting(monkeypatch, target, name)
        for target, name in [
            (asyncio.BaseEventLoop, "_call_soon"),
            (asyncio.BaseEventLoop, "_check_closed"),
            (asyncio.Handle, "__init__"),
            (first_turn._Ready, "append"),
        ]
    ]
    placed = counting(monkeypatch, first_turn._Ready, "place")

    async def steps() -> tuple[int, int]:
        before, places = sum(map(len, asyncio_s)), len(placed)
        for _ in range(STEPS):
            await asyncio.sleep(0)
        return sum(map(len, asyncio_s)) - before, len(placed) - places

    assert on(FirstTurnLoop, steps) == (0, STEPS)
    assert on(asyncio.SelectorEventLoop, steps)[0] >= 3 * STEPS  # what it saves


@pytest.mark.unit
def test_a_handle_the_loop_makes_is_asyncio_s_own() -> None:
    loop = FirstTurnLoop()
    try:
        ran: list[int] = []
        handle = loop.call_soon(ran.append, 1)
        reference = asyncio.Handle(ran.append, (1,), loop, handle._context)  # type: ignore[attr-defined]
        assert type(handle) is asyncio.Handle
        for name in asyncio.Handle.__slots__:
            if name != "__weakref__":
                assert getattr(handle, name) == getattr(reference, name), name
        loop.call_soon(ran.append, 2).cancel()
        loop.run_until_complete(asyncio.sleep(0))
        assert ran == [1]  # the cancelled one was skipped
        loop.set_debug(True)  # asyncio's own, which records where it was scheduled
        assert loop.call_soon(ran.append, 3)._source_traceback  # type: ignore[attr-defined]
    finally:
        loop.close()
    with pytest.raises(RuntimeError, match="closed"):
        loop.call_soon(ran.append, 4)


@pytest.mark.unit
def test_what_a_marked_task_starts_goes_first_until_the_mark_ends() -> None:
    async def scenario() -> list[bool]:
        seen: list[bool] = []

        async def child() -> None:
            seen.append(going_first())

        mark = go_first()
        await asyncio.create_task(child())
        mark.end()
        await asyncio.create_task(child())
        return seen

    assert first_turn.run(scenario()) == [True, False]


class Pipe:
    """A stream writer's stand-in: records each write."""

    def __init__(self) -> None:
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(data)

    def is_closing(self) -> bool:
        return False


async def steps_before_a_starting_run_s_input_is_written() -> tuple[int, list[bytes]]:
    """Steps the runs under way take between a starting run's send of its input, with
    another run's message queued before it, and the write of both."""
    taken = 0
    pipe = Pipe()
    channel = Channel[FromWorker](asyncio.StreamReader(), pipe, FromWorker)  # type: ignore[arg-type]
    starting = contextvars.copy_context()
    starting.run(go_first)

    async def under_way() -> None:
        nonlocal taken
        while not pipe.writes:
            taken += 1
            await asyncio.sleep(0)

    others = [asyncio.create_task(under_way()) for _ in range(UNDER_WAY)]
    await asyncio.sleep(0)
    sent = asyncio.get_running_loop().create_future()

    def send_input() -> None:
        sent.set_result(taken)
        starting.run(channel.send, Cancel(2))

    asyncio.get_running_loop().call_soon(channel.send, Cancel(1))  # at its turn's end
    asyncio.get_running_loop().call_soon(send_input)
    await asyncio.gather(*others)
    return taken - sent.result(), pipe.writes


async def read_back(writes: list[bytes]) -> list[FromMain]:
    """The messages ``writes`` hold, as the other end of the pipe reads them (a reader is
    made on a running loop: outside one, 3.11's asks for the thread's current loop)."""
    reader = asyncio.StreamReader()
    reader.feed_data(b"".join(writes))
    reader.feed_eof()
    received = Channel[FromMain](reader, Pipe(), FromMain)  # type: ignore[arg-type]
    return [await received.receive(), await received.receive()]


@pytest.mark.unit
def test_what_a_starting_run_sends_is_written_in_its_own_turn() -> None:
    steps, writes = on(FirstTurnLoop, steps_before_a_starting_run_s_input_is_written)
    assert steps == 0  # not after the next turn's steps of every run under way
    assert len(writes) == 1  # the other run's message with it, in the order sent
    assert first_turn.run(read_back(writes)) == [Cancel(1), Cancel(2)]
    # On asyncio's own loop the write comes at the end of the next turn, as before.
    steps, _ = on(asyncio.SelectorEventLoop, steps_before_a_starting_run_s_input_is_written)
    assert steps == UNDER_WAY


class Invocation:
    """ADK's side of a run as the worker sees it: records whether the run goes first as
    it makes each event."""

    def __init__(self) -> None:
        self.going_first: list[bool] = []

    async def run(self, runner: object, **_: Any) -> AsyncGenerator[AdkEvent, None]:
        for text in ("업무 요청", " 목록"):
            self.going_first.append(going_first())
            content = types.Content(role="model", parts=[types.Part(text=text)])
            yield AdkEvent(author="agent", invocation_id="i-1", content=content, partial=True)


class Runner:
    async def close(self) -> None:
        pass


def start(run: int) -> Start:
    session = Session(app_name="app", user_id="u", id="t-1")
    return Start(
        run=run,
        user_id="u",
        thread_id="t-1",
        session=session.model_dump_json(exclude_none=True, by_alias=True).encode(),
        message=None,
        invocation_id="i-1",
        state_delta=None,
        metadata={"runId": f"r-{run}"},
        client_tools=[],
        catalogs=None,
        caller=None,
    )


@pytest.mark.server
async def test_a_worker_s_run_goes_first_until_its_first_event_is_sent(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=worker.__name__)
    invocation = Invocation()
    connected: asyncio.Queue[Channel[FromWorker]] = asyncio.Queue()

    async def main_process(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connected.put_nowait(Channel(reader, writer, FromWorker))

    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "pipe")
        server = await asyncio.start_unix_server(main_process, path=path)
        serving = asyncio.create_task(
            worker.serve(path, 1, Runner(), invocation, RemoteSessions())  # type: ignore[arg-type]
        )
        try:
            channel = await asyncio.wait_for(connected.get(), scaled(5.0))
            received: list[object] = [await channel.receive()]
            channel.send(start(1))
            while not isinstance(received[-1], Finished):
                received.append(await asyncio.wait_for(channel.receive(), scaled(5.0)))
            channel.close()
            await asyncio.wait_for(serving, scaled(5.0))
        finally:
            serving.cancel()
            server.close()
    # The second chunk is the first's but for its text: it crosses as that (``chunks``).
    assert [type(message) for message in received] == [Hello, Yielded, Streamed, Finished]
    # Its first event made going first; the next one after it was sent, waiting its turn.
    assert invocation.going_first == [True, False]
    assert not going_first()  # nothing of the run's mark reached the test's own context
    # As it stops, the worker says what serving cost it a run (start-up left out).
    assert re.search(r"stopping \(.*; runs served: 1, [\d.]+ ms of CPU a run\)", caplog.text)


def grown(before: list[tuple[str, float]], after: list[tuple[str, float]]) -> dict[str, float]:
    return {name: value - dict(before)[name] for name, value in after}


async def counted_to_a_first_event() -> tuple[dict[str, float], list[tuple[str, float]]]:
    """What a counting loop counts while a starting run takes ``STEPS`` steps with
    ``UNDER_WAY`` runs under way, and after, once it sent its first event."""

    async def starting() -> tuple[dict[str, float], list[tuple[str, float]]]:
        mark = go_first()
        began = first_turn.counts("worker_began")
        for _ in range(STEPS):
            await asyncio.sleep(0)
        called = first_turn.counts("model_called")
        mark.end()
        return grown(began, called), first_turn.counts("model_called")

    return await beside_runs_under_way(starting(), [0])


@pytest.mark.unit
def test_a_counting_loop_counts_a_starting_runs_own_steps_apart_from_the_others() -> None:
    span, after_end = on(lambda: FirstTurnLoop(counting=True), counted_to_a_first_event)
    assert span["own"] == STEPS  # each step of its own, and only those
    assert span["callbacks"] == STEPS and span["went_first"] == STEPS
    assert span["turns"] <= 1  # its steps chained through the turn they began in
    for name in ("own_cpu", "cpu", "on_cpu", "waited_for_cpu", "collecting"):
        assert span[name] >= 0.0, name
    assert after_end == []  # past its first event, nothing is counted for the run


@pytest.mark.unit
def test_a_counting_loop_counts_each_turn_and_every_callback() -> None:
    async def unmarked_steps() -> tuple[dict[str, float], list[tuple[str, float]]]:
        mark = go_first()
        before = first_turn.counts("worker_began")
        mark.on = False  # its steps wait their turn: one a turn
        for _ in range(STEPS):
            await asyncio.sleep(0)
        mark.on = True
        return grown(before, first_turn.counts("model_called")), []

    span, _ = on(lambda: FirstTurnLoop(counting=True), unmarked_steps)
    assert span["turns"] >= STEPS and span["own"] == STEPS
    assert span["went_first"] == 0


@pytest.mark.unit
def test_a_loop_that_does_not_count_gives_no_counts() -> None:
    async def counted() -> list[tuple[str, float]]:
        go_first()
        return first_turn.counts("worker_began")

    assert on(FirstTurnLoop, counted) == []
    assert on(asyncio.SelectorEventLoop, counted) == []


async def two_starts_steps() -> list[str]:
    """The order of the steps of two starting runs, the younger's task scheduled first."""
    order: list[str] = []
    older, younger = contextvars.copy_context(), contextvars.copy_context()
    older.run(go_first)
    younger.run(go_first)

    async def steps(name: str) -> None:
        for _ in range(STEPS):
            order.append(name)
            await asyncio.sleep(0)

    loop = asyncio.get_running_loop()
    both = [
        loop.create_task(steps("younger"), context=younger),
        loop.create_task(steps("older"), context=older),
    ]
    await asyncio.gather(*both)
    return order


@pytest.mark.unit
def test_of_two_starting_runs_the_older_ones_steps_go_first() -> None:
    # A start's steps are not shared out with every start that came after it: each takes
    # what ran before it, so a start waits for the older ones alone.
    order = on(FirstTurnLoop, two_starts_steps)
    assert order == ["older"] * STEPS + ["younger"] * STEPS
