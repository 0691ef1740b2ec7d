"""Takeovers: a dead holder's lease taken by an input, and a cancel sent during its close.

The cluster and the engine are stand-ins: what is asserted is the order of the steps
(close, then go on or not) and who lets the lease go, which the end-to-end cluster tests
(tests/cluster/) cannot time precisely.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from gateway.hub.takeover import Takeovers
from gateway.metrics import OFF
from gateway.store.frames import FrameLog
from gateway.store.leases import Taken
from gateway.store.recovery import Afterwards, Unfinished

pytestmark = pytest.mark.unit

LEFT = Unfinished("demo", "t-1", Afterwards.ASK_AGAIN, "inv-1")


class DeadHolderCluster:
    """Hands out a lease taken from a dead process, and counts releases."""

    def __init__(self) -> None:
        self.released: list[str] = []

    async def take(self, thread_id: str, user_id: str, run_id: str) -> Taken:
        return Taken(thread_id, "dead-process")

    def release(self, thread_id: str) -> None:
        self.released.append(thread_id)


class SlowClose:
    """An engine whose close of the cut-off run waits until the test lets it finish."""

    def __init__(self) -> None:
        self.closing = asyncio.Event()
        self.go_on = asyncio.Event()

    async def close_cut_off(self, thread_id: str) -> Unfinished:
        self.closing.set()
        await self.go_on.wait()
        return LEFT

    async def log_head(self, user_id: str, thread_id: str) -> int:
        return 0

    async def frames_after(self, user_id: str, thread_id: str, after: int) -> FrameLog:
        raise AssertionError("an empty log is not read")


def takeovers(
    cluster: DeadHolderCluster, engine: SlowClose, finished: list[Unfinished]
) -> Takeovers:
    return Takeovers(
        cast(Any, engine),
        cast(Any, cluster),
        OFF,
        finish=finished.append,
        read_again=lambda thread_id: None,
    )


async def test_what_a_dead_holder_left_runs_before_the_input_that_took_its_lease() -> None:
    cluster, engine, finished = DeadHolderCluster(), SlowClose(), []
    engine.go_on.set()
    assert await takeovers(cluster, engine, finished).lease("t-1", "demo", "run-1") is False
    assert finished == [LEFT]
    assert cluster.released == []  # the run that goes on holds it


async def test_a_cancel_during_the_close_lets_the_input_run_instead() -> None:
    cluster, engine, finished = DeadHolderCluster(), SlowClose(), []
    taking = takeovers(cluster, engine, finished)
    leasing = asyncio.create_task(taking.lease("t-1", "demo", "run-1"))
    await engine.closing.wait()
    assert taking.closing("t-1")
    assert taking.stop("t-1")  # the person pressed Stop while the close was under way
    engine.go_on.set()
    assert await leasing is True  # the input holds the lease, and the cut-off reply is not asked
    assert finished == []
    assert not taking.closing("t-1") and not taking.stopped


async def test_a_sweep_waits_for_the_close_an_input_started() -> None:
    cluster, engine, finished = DeadHolderCluster(), SlowClose(), []
    taking = takeovers(cluster, engine, finished)
    leasing = asyncio.create_task(taking.lease("t-1", "demo", "run-1"))
    await engine.closing.wait()
    sweeping = asyncio.create_task(taking.take_over("demo", "t-1"))
    await asyncio.sleep(0)
    assert not sweeping.done()
    engine.go_on.set()
    assert await leasing is False and await sweeping is True
    assert finished == [LEFT]  # closed once, gone on with once


async def test_a_sweep_that_finds_the_holder_dead_while_an_input_takes_its_lease_waits() -> None:
    """The input's take is under way (a round trip to the database) when the sweep finds
    the holder dead: the sweep waits for the input instead of taking and closing beside it."""
    cluster, engine, finished = GatedCluster(), SlowClose(), []
    engine.go_on.set()
    taking = takeovers(cluster, engine, finished)
    leasing = asyncio.create_task(taking.lease("t-1", "demo", "run-1"))
    await cluster.asked.wait()
    sweeping = asyncio.create_task(taking.take_over("demo", "t-1"))
    await asyncio.sleep(0)
    assert not sweeping.done()
    cluster.answer.set()
    assert await leasing is False and await sweeping is True
    assert cluster.takes == ["run-1"]  # the sweep took nothing: the input closed the run
    assert finished == [LEFT] and cluster.released == []
    assert not taking.closing("t-1")


class GatedCluster(DeadHolderCluster):
    """A dead holder's lease, handed out once the test lets the take's round trip end."""

    def __init__(self) -> None:
        super().__init__()
        self.takes: list[str] = []
        self.asked = asyncio.Event()
        self.answer = asyncio.Event()

    async def take(self, thread_id: str, user_id: str, run_id: str) -> Taken:
        self.takes.append(run_id)
        self.asked.set()
        await self.answer.wait()
        return Taken(thread_id, "dead-process" if len(self.takes) == 1 else None)


def test_a_cancel_for_a_thread_not_being_closed_is_not_taken() -> None:
    taking = takeovers(DeadHolderCluster(), SlowClose(), [])
    assert taking.stop("t-1") is False
    assert not taking.stopped
