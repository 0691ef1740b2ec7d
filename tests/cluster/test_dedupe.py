"""An input sent twice runs once across the processes of a cluster (``gateway.hub.dedupe``):
a copy that reaches another process finds the run in the store, whether it has run or is
running there, or in the thread's lease while that run has stored nothing yet, and neither
runs it again nor stops it as a new message would."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.support.agui import new_id, outcome, text_of, user_input
from tests.support.budgets import eventually
from tests.support.dedupe import ran_once, stored, told_deduped
from tests.support.first_events import LONG, replied
from tests.support.postgres import Postgres
from tests.support.servers import RunningGateway, running_gateway

pytestmark = pytest.mark.process


@pytest.fixture
async def pair(postgres: Postgres) -> AsyncIterator[tuple[RunningGateway, RunningGateway]]:
    """Two gateways on one fresh PostgreSQL database (so in one cluster)."""
    url = postgres.fresh_database()
    async with (
        running_gateway(db=url, scripted_pace_ms=20, lease_check_seconds=0.2) as a,
        running_gateway(db=url, scripted_pace_ms=20, lease_check_seconds=0.2) as b,
    ):
        yield a, b


async def told_then_shown(ws: Any, asked: dict[str, Any]) -> list[dict[str, Any]]:
    await ws.send(asked)
    told_deduped(await ws.until_end(), asked["runId"])
    return await ws.until_end()


async def test_an_input_run_on_one_process_and_sent_to_another_runs_once(pair):
    a, b = pair
    thread = new_id("t")
    asked = user_input(thread, "안녕")
    async with a.socket() as on_a:
        first = await on_a.run(asked)
    assert outcome(first) == {"type": "success"}
    async with b.socket() as on_b:
        shown = await told_then_shown(on_b, asked)
    assert text_of(first) in replied(shown)
    ran_once(await stored(b, thread), asked)


async def test_an_input_sent_to_another_process_while_it_runs_does_not_stop_it(pair):
    a, b = pair
    thread = new_id("t")
    asked = user_input(thread, LONG)
    async with a.socket() as on_a, b.socket() as on_b:
        await on_a.send(asked)
        events = []
        while not text_of(events):  # its message is stored once its reply streams
            events.append(await on_a.next())
        shown = await told_then_shown(on_b, asked)
        rest = await on_a.until_end()
    assert outcome(rest) == {"type": "success"}, "the copy stopped the run"
    # B showed the run going on A, to its end.
    assert outcome(shown) == {"type": "success"} and replied(shown)
    ran_once(await stored(a, thread), asked)


class HeldPlans:
    """Holds every plan of a gateway's runs until let go: the run has its thread's lease
    and has stored nothing of its input yet."""

    def __init__(self, gateway: RunningGateway) -> None:
        self.hub: Any = gateway.app.hub
        self.plan = self.hub.branching.plan
        self.let_go = asyncio.Event()
        self.waiting = 0
        self.hub.branching.plan = self.held

    async def held(self, *args: Any) -> Any:
        self.waiting += 1
        await self.let_go.wait()
        return await self.plan(*args)


async def test_a_copy_that_comes_before_its_run_stored_anything_does_not_stop_it(
    pair: tuple[RunningGateway, RunningGateway], caplog: pytest.LogCaptureFixture
) -> None:
    # The client's socket dropped just after it sent its message to A; it reconnected to
    # B and sent it again while A's run had the lease but was still being planned.
    a, b = pair
    caplog.set_level(logging.INFO, "gateway.hub.dedupe")
    plans = HeldPlans(a)
    thread = new_id("t")
    asked = user_input(thread, "안녕")
    async with a.socket() as on_a, b.socket() as on_b:
        await on_a.send(asked)
        assert (await on_a.next())["type"] == "RUN_STARTED"
        await eventually(lambda: plans.waiting == 1, 10, what="A's run is being planned")
        run_on_a = plans.hub.threads[thread].run
        await on_b.send(asked)
        copy = asyncio.ensure_future(on_b.until_end())
        # Found (B tells its sender), or taken for a new message: A's run is told to stop.
        await eventually(
            lambda: copy.done() or run_on_a.abort.is_set(), 20, what="B decided on the copy"
        )
        plans.let_go.set()
        rest = await on_a.until_end()
        told_deduped(await copy, asked["runId"])
        shown = await on_b.until_end()
    assert outcome(rest) == {"type": "success"}, "the copy stopped the run"
    assert text_of(rest) in replied(shown)
    assert (
        f"run {asked['runId']} of thread {thread} was received already (elsewhere)" in caplog.text
    )
    ran_once(await stored(a, thread), asked)


@pytest.fixture
async def rejecting(postgres: Postgres) -> AsyncIterator[tuple[RunningGateway, RunningGateway]]:
    """Two gateways of one cluster whose busy policy is ``reject`` (``GATEWAY_BUSY``)."""
    url = postgres.fresh_database()
    options: dict[str, Any] = {"busy": "reject", "scripted_pace_ms": 20}
    async with (
        running_gateway(db=url, lease_check_seconds=0.2, **options) as a,
        running_gateway(db=url, lease_check_seconds=0.2, **options) as b,
    ):
        yield a, b


async def replying(ws: Any, asked: dict[str, Any]) -> None:
    """Sends ``asked`` and returns once its reply streams (its message is stored)."""
    await ws.send(asked)
    events: list[dict[str, Any]] = []
    while not text_of(events):
        events.append(await ws.next())


async def test_a_copy_sent_to_another_process_is_found_there_before_a_busy_refusal(
    rejecting: tuple[RunningGateway, RunningGateway],
) -> None:
    # GATEWAY_BUSY=reject refuses a new message while the thread's run goes on; a copy of
    # the running input (resent after a drop, through B) is no new message: it is told it
    # was received, and follows the run, as under the other policies.
    a, b = rejecting
    thread = new_id("t")
    asked = user_input(thread, LONG)
    async with a.socket() as on_a, b.socket() as on_b:
        await replying(on_a, asked)
        shown = await told_then_shown(on_b, asked)
        rest = await on_a.until_end()
    assert outcome(rest) == {"type": "success"}, "the copy stopped the run"
    assert outcome(shown) == {"type": "success"} and replied(shown)
    ran_once(await stored(a, thread), asked)


async def test_a_copy_reaching_a_process_where_inputs_wait_for_its_run_is_found_too(
    rejecting: tuple[RunningGateway, RunningGateway],
) -> None:
    # B holds an input that asked to wait for A's run (forwardedProps.gateway.busy); the
    # copy of A's input that reaches B meanwhile is found, not refused as busy.
    a, b = rejecting
    hub = b.app.hub
    assert hub is not None
    thread = new_id("t")
    asked = user_input(thread, LONG)
    waiting = user_input(thread, "안녕하세요")
    waiting["forwardedProps"] = {"gateway": {"busy": "enqueue"}}
    async with a.socket() as on_a, b.socket() as on_b, b.socket() as queued:
        await replying(on_a, asked)
        await queued.send(waiting)
        await eventually(
            lambda: thread in hub.threads and hub.threads[thread].waiting == 1,
            10,
            what="B's input waits for A's run",
        )
        shown = await told_then_shown(on_b, asked)
        rest = await on_a.until_end()
        after = await queued.until_end()
    assert outcome(rest) == {"type": "success"}, "the copy stopped the run"
    assert replied(shown)
    assert outcome(after) == {"type": "success"} and text_of(after)
    users = [m["id"] for m in await stored(b, thread) if m["role"] == "user"]
    assert users == [asked["messages"][0]["id"], waiting["messages"][0]["id"]]
