"""A process of a cluster that drains hands its threads over at once: a thread whose run
ends on it is taken by another process's waiting input without waiting out a lease, its
client reconnects there after the 1012 and finds the whole reply, and the draining process
takes over no dead process's thread (its close could ask the model again, a run it would
then cut short)."""

from __future__ import annotations

import time

import pytest
from websockets.exceptions import ConnectionClosed

from gateway.doors.drain import CLOSE_CODE
from gateway.store.leases import DeadLease
from tests.support.agui import new_id, text_of, user_input
from tests.support.budgets import scaled
from tests.support.postgres import Postgres
from tests.support.servers import running_gateway

pytestmark = pytest.mark.process

LONG = "자기소개를 길게 해 주세요"


async def test_a_thread_whose_run_ends_on_a_draining_process_goes_on_elsewhere_at_once(
    postgres: Postgres,
) -> None:
    url = postgres.fresh_database()
    thread = new_id("t")
    # A lease far longer than the test: only a release lets B take the thread in time.
    lease = {"lease_seconds": 60.0, "lease_check_seconds": 0.2}
    async with (
        running_gateway(db=url, scripted_pace_ms=20, **lease) as b,
        running_gateway(db=url, scripted_pace_ms=20, drain_seconds=scaled(30), **lease) as a,
        a.socket() as on_a,
        b.socket() as on_b,
    ):
        await on_a.send(user_input(thread, LONG))
        while not text_of(on_a.received):
            await on_a.next()
        a.server.should_exit = True  # A drains; its run goes on
        waiting = user_input(thread, "안녕")
        waiting["forwardedProps"] = {"gateway": {"busy": "enqueue"}}
        await on_b.send(waiting)
        with pytest.raises(ConnectionClosed) as close:
            while True:
                await on_a.next(scaled(30))
        ended = time.monotonic()
        assert close.value.rcvd is not None and close.value.rcvd.code == CLOSE_CODE
        assert on_a.received[-1]["type"] == "RUN_FINISHED"
        # Admitted, it was started at once (docs/first-event.md); its run goes on once
        # B has the thread.
        assert (await on_b.next(scaled(30)))["type"] == "RUN_STARTED"
        await on_b.next(scaled(30))
        assert time.monotonic() - ended < scaled(5), "B waited for the lease to run out"
        assert (await on_b.until_end())[-1]["type"] == "RUN_FINISHED"
        # A's client, told to reconnect, finds the thread and the whole reply on B.
        async with b.socket() as back:
            events = await back.run({"type": "reattach", "threadId": thread})
    [snapshot] = [e for e in events if e["type"] == "MESSAGES_SNAPSHOT"]
    replies = [m["content"] for m in snapshot["messages"] if m["role"] == "assistant"]
    assert text_of(on_a.received) in replies


async def test_a_draining_process_leaves_a_dead_processs_thread_to_the_others() -> None:
    async with running_gateway() as gateway:
        hub = gateway.app.hub
        assert hub is not None
        taken: list[str] = []

        async def take_over(user_id: str, thread_id: str) -> bool:
            taken.append(thread_id)
            return False

        hub.takeovers.take_over = take_over  # type: ignore[method-assign]
        dead = DeadLease("t-dead", "demo", "gone")
        await hub.take_over(dead)
        assert taken == ["t-dead"]  # the cluster's sweep reaches it
        hub.drain()
        await hub.take_over(dead)
        assert taken == ["t-dead"], "a draining process took a dead process's thread over"
