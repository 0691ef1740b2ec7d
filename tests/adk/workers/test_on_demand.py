"""The multi-core default (GATEWAY_WORKERS=auto): a lightly loaded gateway runs every
invocation itself and starts no worker; load starts workers, and new runs go to them once
one is ready, until the load is light again."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from pathlib import Path

import pytest

from gateway import api
from gateway.adk.workers import WorkerPool
from gateway.adk.workers.demand import LOCAL_RUNS
from gateway.config import AUTO_WORKERS, Settings
from gateway.metrics import sample
from tests.support.agui import AgUiSocket, new_id, outcome, text_of, user_input
from tests.support.budgets import eventually
from tests.support.dojo import slow_backend
from tests.support.flagship import flagship_navigated_then_honest_reply
from tests.support.servers import RunningGateway, running_gateway

pytestmark = pytest.mark.server

SLOW_BACKEND = "tests.support.dojo.slow_backend:root_agent"
# Seconds a worker process has to import ADK and the agent and warm up, on a shared machine.
START = 60.0


@pytest.fixture
def two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """The machine has two cores, whatever this one has."""
    monkeypatch.setattr(api, "cores", lambda: 2)


def pool_of(gateway: RunningGateway) -> WorkerPool:
    assert gateway.app.hub is not None
    pool = gateway.app.hub.engine.workers
    assert pool is not None, "the gateway has no worker pool"
    return pool


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
    tmp_path: Path, two_cores: None
) -> None:
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
    ready = tmp_path / "report-ready"
    monkeypatch.setenv(slow_backend.GATE, str(ready))  # workers started later inherit it
    caplog.set_level(logging.INFO, logger="gateway.adk.workers.pool")
    db = str(tmp_path / "threads.db")
    async with (
        running_gateway(agent=SLOW_BACKEND, workers=AUTO_WORKERS, db=db, metrics="on") as gateway,
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
        await eventually(
            lambda: sample(gateway.app.metrics, "gateway_workers") == 1,
            START,
            what="the worker never said it was ready",
        )
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
