"""A worker started in place of a dead one (GATEWAY_WORKERS=2) is watched until its Hello:
one that dies before it is started again, a run waiting for it runs on the next, and a
place whose workers keep dying so is given up, leaving the runs to the main process."""

from __future__ import annotations

import logging
import multiprocessing
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway import api
from gateway.adk.workers import pool as pool_module
from gateway.adk.workers.pool import START_ATTEMPTS, WorkerProcess
from tests.support.agui import new_id, outcome, tool_calls, user_input
from tests.support.budgets import eventually, scaled
from tests.support.flagship import FLAGSHIP
from tests.support.servers import running_gateway
from tests.support.workers import killed, pool_of

pytestmark = pytest.mark.server

# The gateway's own workers, started with it.
WORKERS = 2
# Worker processes import ADK and the agent on a shared machine: seconds, not milliseconds.
START = scaled(60)


def silent() -> WorkerProcess:
    """A worker process that never says Hello (one still importing its agent)."""
    process = multiprocessing.get_context("spawn").Process(
        target=time.sleep, args=(3600,), daemon=True
    )
    process.start()
    return process


def exiting() -> WorkerProcess:
    """A worker process that dies before its Hello (an agent that no longer imports)."""
    process = multiprocessing.get_context("spawn").Process(target=sys.exit, args=(3,))
    process.start()
    return process


def spawning(
    monkeypatch: pytest.MonkeyPatch, *instead: Callable[[], WorkerProcess]
) -> list[WorkerProcess]:
    """The gateway's workers start as they would; each start after them is the next of
    ``instead``'s processes, then real workers again. Every process started, in order."""
    real = api._spawn_worker
    started: list[WorkerProcess] = []

    def spawn(*given: Any) -> WorkerProcess:
        nth = len(started) - WORKERS
        started.append(instead[nth]() if 0 <= nth < len(instead) else real(*given))
        return started[-1]

    monkeypatch.setattr(api, "_spawn_worker", spawn)
    return started


def pids(processes: list[WorkerProcess]) -> set[int]:
    return {process.pid for process in processes if process.pid is not None}


async def test_a_worker_dying_before_its_hello_in_place_of_a_dead_one_is_started_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Waiting out a worker that is gone would outlast the test.
    monkeypatch.setattr(pool_module, "START_SECONDS", 3600.0)
    started = spawning(monkeypatch, silent, silent)
    caplog.set_level(logging.WARNING, logger="gateway.adk.workers.pool")
    async with running_gateway(workers=WORKERS, db=str(tmp_path / "threads.db")) as gateway:
        pool = pool_of(gateway)
        killed(pool.pids())
        await eventually(
            lambda: len(started) == WORKERS + 2, START, what="the dead workers were not replaced"
        )
        async with gateway.socket() as ws:
            # No worker is ready: the run waits for one of those starting, which die first.
            await ws.send(user_input(new_id("t"), FLAGSHIP))
            killed(pids(started[WORKERS:]))
            events = await ws.until_end(START)
        assert outcome(events)["type"] == "success"
        assert tool_calls(events, "navigateToScreen")
        assert len(started) == WORKERS + 4
        assert set(pool.pids()) == pids(started[WORKERS + 2 :])
    said = [r.getMessage() for r in caplog.records]
    for process in started[WORKERS : WORKERS + 2]:
        assert any(
            f"(pid {process.pid}) did not start (it exited); starting another" in line
            for line in said
        ), said


async def test_a_place_whose_workers_keep_dying_before_their_hello_is_given_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    started = spawning(monkeypatch, *[exiting] * (WORKERS * START_ATTEMPTS))
    caplog.set_level(logging.WARNING, logger="gateway.adk.workers.pool")

    def given_up() -> list[str]:
        return [r.getMessage() for r in caplog.records if "place is given up" in r.getMessage()]

    async with running_gateway(workers=WORKERS, db=str(tmp_path / "threads.db")) as gateway:
        pool = pool_of(gateway)
        killed(pool.pids())
        await eventually(lambda: len(given_up()) == WORKERS, START, what="no place was given up")
        assert len(started) == WORKERS + WORKERS * START_ATTEMPTS  # no start after the last
        assert pool.pids() == []
        # The runs stay in this process, as correct.
        async with gateway.socket() as ws:
            events = await ws.run(user_input(new_id("t"), FLAGSHIP))
        assert outcome(events)["type"] == "success"
        assert tool_calls(events, "navigateToScreen")
    assert given_up()[-1].endswith("runs' invocations stay in this process"), given_up()
