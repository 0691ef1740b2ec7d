"""The multi-core default (GATEWAY_WORKERS=auto): a lightly loaded gateway runs every
invocation itself and starts no worker; load starts workers, and new runs go to them once
one is ready, until the load is light again. Runs split between the main process and a
worker keep every promise (cancel, reattach, a dead worker's runs), and a worker that
cannot start leaves the runs here. The load is ``tests.support.dojo.slow_backend``'s tool
calls, held in flight until the test lets the backend answer."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import multiprocessing
import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import pytest

from gateway import api
from gateway.adk.workers import WorkerPool, WorkersNotStarted
from gateway.adk.workers.demand import LOCAL_RUNS
from gateway.config import AUTO_WORKERS, Settings
from gateway.metrics import sample
from tests.support.agui import AgUiSocket, new_id, outcome, snapshot_of, text_of, user_input
from tests.support.budgets import eventually
from tests.support.dojo import slow_backend
from tests.support.flagship import flagship_navigated_then_honest_reply
from tests.support.servers import RunningGateway, running_gateway
from tests.support.workers import pool_of

pytestmark = pytest.mark.server

SLOW_BACKEND = "tests.support.dojo.slow_backend:root_agent"
# Seconds a worker process has to import ADK and the agent and warm up, on a shared machine.
START = 60.0


@pytest.fixture
def two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine has two cores, whatever this one has."""
    monkeypatch.setattr(api, "cores", lambda: 2)


@contextlib.asynccontextmanager
async def slow_backend_on_demand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[RunningGateway, Path]]:
    """A gateway with workers on demand (metrics on, a SQLite file) serving the slow
    backend's agent, and the file whose creation lets the backend answer."""
    ready = tmp_path / "report-ready"
    monkeypatch.setenv(slow_backend.GATE, str(ready))  # workers started later inherit it
    db = str(tmp_path / "threads.db")
    async with running_gateway(
        agent=SLOW_BACKEND, workers=AUTO_WORKERS, db=db, metrics="on"
    ) as gateway:
        yield gateway, ready


async def a_worker_ready(gateway: RunningGateway) -> None:
    await eventually(
        lambda: sample(gateway.app.metrics, "gateway_workers") == 1,
        START,
        what="the worker never said it was ready",
    )


def placed(gateway: RunningGateway, where: str) -> float:
    return sample(gateway.app.metrics, "gateway_invocations_total", where=where) or 0.0


def runs_placed(gateway: RunningGateway, where: str, count: int) -> bool:
    return placed(gateway, where) == count


async def reported(ws: AgUiSocket) -> int:
    """The process that ran the run's tool, as the agent's reply says it."""
    events = await ws.until_end()
    assert outcome(events) == {"type": "success"}, events[-1]
    return int(text_of(events).rstrip(".").rsplit(" ", 1)[1])


def test_workers_start_on_demand_by_default() -> None:
    assert Settings().workers == AUTO_WORKERS


async def test_one_user_on_a_machine_of_many_cores_starts_no_worker(
    tmp_path: Path, two_cores: None, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="gateway.adk.workers.pool")
    async with running_gateway(
        workers=AUTO_WORKERS, db=str(tmp_path / "threads.db"), metrics="on"
    ) as gateway:
        pool = pool_of(gateway)
        assert pool.on_demand and pool.count == 2
        for _ in range(3):
            await flagship_navigated_then_honest_reply(gateway)
        assert pool.pids() == []
        assert sample(gateway.app.metrics, "gateway_workers") == 0
        # Each story: the run that calls the browser's tool, and the one its answer resumes.
        assert placed(gateway, "main") == 6 and placed(gateway, "worker") == 0
    # Closed with no worker ever started, the pool has no kept sessions to count.
    assert not [r for r in caplog.records if "kept sessions" in r.getMessage()]


async def test_one_core_serves_in_one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(api, "cores", lambda: 1)
    async with running_gateway(workers=AUTO_WORKERS) as gateway:
        assert gateway.app.hub is not None and gateway.app.hub.engine.workers is None


async def test_load_starts_a_worker_new_runs_go_to_it_and_light_load_comes_back_here(
    tmp_path: Path,
    two_cores: None,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="gateway.adk.workers.pool")
    async with (
        slow_backend_on_demand(tmp_path, monkeypatch) as (gateway, ready),
        contextlib.AsyncExitStack() as sockets,
    ):
        pool = pool_of(gateway)
        tabs = [await sockets.enter_async_context(gateway.socket()) for _ in range(LOCAL_RUNS + 2)]
        # As many runs in flight as the main process takes on alone: no worker yet.
        for number, ws in enumerate(tabs[:LOCAL_RUNS]):
            await ws.send(user_input(new_id("t"), f"report r{number}"))
            await eventually(
                functools.partial(runs_placed, gateway, "main", number + 1),
                10,
                what="the run went nowhere",
            )
        assert pool.pids() == []
        # One more: still run here, and a worker starts for what comes next.
        await tabs[LOCAL_RUNS].send(user_input(new_id("t"), "report busy"))
        await eventually(lambda: len(pool.pids()) == 1, 10, what="no worker started")
        [started] = [r.getMessage() for r in caplog.records if "starting worker" in r.getMessage()]
        assert started == f"starting worker 1 of up to 2: {LOCAL_RUNS} runs in flight"
        assert placed(gateway, "main") == LOCAL_RUNS + 1
        await a_worker_ready(gateway)
        [said] = [r.getMessage() for r in caplog.records if "is ready" in r.getMessage()]
        assert said.startswith(f"worker 1 (pid {pool.pids()[0]}) is ready, ")
        # Ready: the next run goes to it, while the others still wait on the backend.
        await tabs[-1].send(user_input(new_id("t"), "report there"))
        await eventually(lambda: placed(gateway, "worker") == 1, 10, what="not sent to the worker")
        ready.touch()
        [worker] = pool.pids()
        assert [await reported(ws) for ws in tabs] == [os.getpid()] * (LOCAL_RUNS + 1) + [worker]
        # The load is gone: the next run is the main process's again, and the worker stays.
        async with gateway.socket() as ws:
            await ws.send(user_input(new_id("t"), "report later"))
            assert await reported(ws) == os.getpid()
        assert pool.pids() == [worker]
        assert len([r for r in caplog.records if "starting worker" in r.getMessage()]) == 1


async def test_runs_split_between_this_process_and_a_worker_keep_every_promise(
    tmp_path: Path, two_cores: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with (
        slow_backend_on_demand(tmp_path, monkeypatch) as (gateway, ready),
        contextlib.AsyncExitStack() as sockets,
    ):
        pool = pool_of(gateway)
        here = [await sockets.enter_async_context(gateway.socket()) for _ in range(LOCAL_RUNS + 1)]
        local = [new_id("t") for _ in here]
        for ws, thread in zip(here, local, strict=True):
            await ws.send(user_input(thread, "report here"))
            await until_the_tool_runs(ws)
        await a_worker_ready(gateway)
        # Three runs in the worker, on threads of their own, each in its tool.
        there = [await sockets.enter_async_context(gateway.socket()) for _ in range(3)]
        threads = [new_id("t") for _ in there]
        for ws, thread in zip(there, threads, strict=True):
            await ws.send(user_input(thread, "report there"))
            await until_the_tool_runs(ws)
        assert placed(gateway, "worker") == 3

        # Cancel: a run here and a run there stop alike, and their threads stay whole.
        for ws, thread in ((here[0], local[0]), (there[0], threads[0])):
            await ws.send({"type": "cancel", "threadId": thread})
            assert outcome(await ws.until_end()) == {"type": "cancelled"}
        # Reattach: another tab follows a run the worker runs.
        follower = await sockets.enter_async_context(gateway.socket())
        await follower.send({"type": "reattach", "threadId": threads[2]})
        # The worker dies: its runs end RUN_INTERRUPTED, for the tab that follows too; the
        # runs here go on, and another worker takes its place.
        [killed] = pool.pids()
        os.kill(killed, signal.SIGKILL)
        for ws in (there[1], there[2], follower):
            cut = await ws.until_end(START)
            assert cut[-1]["type"] == "RUN_ERROR" and cut[-1]["code"] == "RUN_INTERRUPTED"
        await eventually(
            lambda: len(pool.pids()) == 1 and pool.pids() != [killed],
            START,
            what="no worker took the dead one's place",
        )
        ready.touch()
        assert [await reported(ws) for ws in here[1:]] == [os.getpid()] * LOCAL_RUNS

        # Every thread is whole (no call without its result), and the next input runs.
        for thread in [local[0], *threads]:
            async with gateway.socket() as ws:
                shown = snapshot_of(await ws.run({"type": "reattach", "threadId": thread}))
                asked = {c["id"] for m in shown for c in m.get("toolCalls") or []}
                assert asked <= {m["toolCallId"] for m in shown if m["role"] == "tool"}, shown
                again = user_input(thread, "report again")
                await ws.send(again)
                while (event := await ws.next(START))["type"] != "RUN_STARTED" or (
                    event["runId"] != again["runId"]
                ):
                    pass  # a run the thread owed after the worker died, first
                assert outcome(await ws.until_end(START)) == {"type": "success"}


async def until_the_tool_runs(ws: AgUiSocket) -> None:
    while (await ws.next(START))["type"] != "TOOL_CALL_START":
        pass


def exiting_at_once(_agent: object, _settings: object, _path: str, index: int) -> Any:
    """A worker process that dies before it says Hello (an agent that fails to import)."""
    process = multiprocessing.get_context("spawn").Process(target=sys.exit, args=(3,))
    process.start()
    return process


async def test_a_worker_that_fails_to_start_leaves_the_runs_here(
    tmp_path: Path,
    two_cores: None,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(api, "_spawn_worker", exiting_at_once)
    caplog.set_level(logging.INFO, logger="gateway.adk.workers.pool")
    async with (
        slow_backend_on_demand(tmp_path, monkeypatch) as (gateway, ready),
        contextlib.AsyncExitStack() as sockets,
    ):
        tabs = [await sockets.enter_async_context(gateway.socket()) for _ in range(LOCAL_RUNS + 3)]
        for ws in tabs[: LOCAL_RUNS + 1]:
            await ws.send(user_input(new_id("t"), "report here"))
            await until_the_tool_runs(ws)
        await eventually(
            lambda: any("did not start" in r.getMessage() for r in caplog.records),
            START,
            what="the failed start was not noticed",
        )
        for ws in tabs[LOCAL_RUNS + 1 :]:  # more load: no other start is tried
            await ws.send(user_input(new_id("t"), "report here"))
            await until_the_tool_runs(ws)
        ready.touch()
        assert [await reported(ws) for ws in tabs] == [os.getpid()] * len(tabs)
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert len([line for line in said if "starting worker" in line]) == 1
    assert "worker 1 did not start (it exited); runs' invocations stay in this process" in said


async def test_eager_workers_that_cannot_start_stop_the_start_at_once_saying_which() -> None:
    """``GATEWAY_WORKERS=2`` whose worker dies before its Hello (an agent that imports here
    but not in a new process; a script that serves outside its ``__main__`` guard): the
    start fails with the worker, its exit code and where to look, not after waiting out
    the start timeout for a worker that is gone."""
    pool = WorkerPool(2, functools.partial(exiting_at_once, None, None), cast(Any, None))
    with pytest.raises(WorkersNotStarted) as failed:
        await asyncio.wait_for(pool.start(), START)  # START_SECONDS is 120
    said = str(failed.value)
    assert re.match(r"worker [12] exited \(exit code 3\) before it was ready; ", said), said
    assert "GATEWAY_WORKERS=0 serves in one process" in said
