"""What an idle /ws connection costs the gateway: nothing parked that work would make.

A gateway holds thousands of connections, most of them idle between runs (issue 32: at most
25 KiB an idle WebSocket, all told; ``scripts/bench_footprint.py`` measures the whole).
"""

from __future__ import annotations

import contextlib
import gc
import tracemalloc

import pytest
from websockets.asyncio.client import connect

from gateway.doors.websocket import WebSocketSession
from tests.support.agui import new_id, outcome, user_input
from tests.support.budgets import eventually
from tests.support.servers import RunningGateway, running_gateway

pytestmark = pytest.mark.server

# The Python heap an idle connection may hold through the doors' code: its session, queues
# and tasks, and the protocol objects uvicorn makes for it there (``doors.transport``); an
# asyncio.Queue and a parked worker a connection, and two Events in its send queue, made 28 KiB.
DOOR_BYTES_PER_IDLE_SOCKET = 25 * 1024
SOCKETS = 40
# The filter counts whatever runs through the doors' code meanwhile, in this process: on a
# busy machine another test's gateway still closing its connections, or this one's last
# handshakes' buffers, can add to one measure (a CI run saw 26.1 and 27.0 KiB where a quiet
# one sees 22.3). They only ever add, and a connection's own cost is in every measure: the
# least of a few is the bound's.
ATTEMPTS = 3


def sessions(gateway: RunningGateway) -> list[WebSocketSession]:
    assert gateway.app.draining is not None
    return [c for c in gateway.app.draining.connections if isinstance(c, WebSocketSession)]


async def test_an_idle_connection_parks_no_worker_and_works_when_sent_a_run() -> None:
    async with running_gateway() as gateway, gateway.socket() as ws:
        await eventually(lambda: sessions(gateway), 5, what="the connection was not served")
        [session] = sessions(gateway)
        assert session.worker is None, "nothing was sent: nothing works"
        for _ in range(2):  # the second run starts a worker again
            events = await ws.run(user_input(new_id("t"), "안녕"))
            assert outcome(events) == {"type": "success"}
            worker = session.worker
            assert worker is not None
            await eventually(worker.done, 5, what="the worker did not end with its work")


async def test_what_the_doors_hold_for_an_idle_connection_is_bounded() -> None:
    async with running_gateway() as gateway:
        held = [await _held_by_idle_connections(gateway, n) for n in range(ATTEMPTS)]
    assert min(held) < DOOR_BYTES_PER_IDLE_SOCKET, f"{held} bytes an idle connection"


async def _held_by_idle_connections(gateway: RunningGateway, attempt: int) -> float:
    """What ``SOCKETS`` new idle connections hold through the doors' code, each."""
    async with contextlib.AsyncExitStack() as stack:
        gc.collect()
        tracemalloc.start(25)
        try:
            before = tracemalloc.take_snapshot()
            for n in range(SOCKETS):
                await stack.enter_async_context(connect(gateway.ws_url(f"idle-{attempt}-{n}")))
            await eventually(
                lambda: len(sessions(gateway)) == SOCKETS, 5, what="not every connection served"
            )
            gc.collect()
            after = tracemalloc.take_snapshot()
        finally:
            tracemalloc.stop()
    await eventually(lambda: not sessions(gateway), 5, what="the connections did not close")
    doors = tracemalloc.Filter(True, "*/gateway/doors/*", all_frames=True)
    grew = after.filter_traces([doors]).compare_to(before.filter_traces([doors]), "filename")
    return sum(stat.size_diff for stat in grew) / SOCKETS
