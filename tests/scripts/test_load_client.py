"""scripts/_load_client.py: a load client's messages are stamped as they reach its
connection, one stamp a message in the order ``recv`` returns them; what the client's
thread did over a span (on a core, waiting for one, collecting) is summed from its ticks;
and while its users run, it collects nothing."""

from __future__ import annotations

import asyncio
import gc

import pytest
from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve

from scripts._load_client import Process, Stamped, collector_paused


@pytest.mark.server
async def test_each_message_is_stamped_as_it_arrives_in_the_order_recv_returns_it() -> None:
    async def three_and_a_ping(ws: ServerConnection) -> None:
        await ws.send("a")
        await ws.ping()  # a control frame: the client answers it, and it is no data
        await ws.send(b"b")
        await ws.send("c")
        await ws.send(["d", "e"])  # one message in two frames: one stamp
        await ws.wait_closed()

    async with serve(three_and_a_ping, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        async with connect(f"ws://127.0.0.1:{port}", create_connection=Stamped) as ws:
            assert isinstance(ws, Stamped)
            received = [await ws.recv() for _ in range(4)]
            assert received == ["a", b"b", "c", "de"]
            stamps = list(ws.arrived)
    assert len(stamps) == 4
    assert stamps == sorted(stamps)


@pytest.mark.unit
def test_what_the_client_did_over_a_span_is_summed_from_its_ticks() -> None:
    process = Process()
    # Ticks at 1.000, 1.010, 1.020: each 10 ms interval ran 4 ms and waited 2 ms for a core.
    process.at = [1.000, 1.010, 1.020]
    process.ran = [0.004, 0.004, 0.004]
    process.waited = [0.002, 0.002, 0.002]
    process.late = [0.0, 0.003, 0.001]
    process.collections = [(1.012, 1.014, 2, 0.002), (1.030, 1.031, 0, 0.001)]
    # From halfway through the second interval to the end of the third: 1.5 intervals.
    spent = process.spent(1.005, 1.020)
    assert spent.ran == pytest.approx(6.0)
    assert spent.waited == pytest.approx(3.0)
    assert spent.collected == pytest.approx(2.0)  # the collection inside, not the later one
    assert spent.late == pytest.approx(3.0)
    lines = process.summary(1.0, 1.02)
    assert "collections of generation 2: 1" in "\n".join(lines)


@pytest.mark.unit
async def test_ticking_counts_the_clients_own_cpu_and_collections() -> None:
    process = Process()
    ticking = asyncio.create_task(process.run())
    await asyncio.sleep(0.05)
    gc.collect(0)
    await asyncio.sleep(0.02)
    ticking.cancel()
    with pytest.raises(asyncio.CancelledError):
        await ticking
    assert len(process.at) >= 2
    assert any(generation == 0 for _, _, generation, _ in process.collections)


@pytest.mark.unit
def test_the_client_collects_nothing_while_its_users_run() -> None:
    collections: list[int] = []

    def counted(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    gc.callbacks.append(counted)
    try:
        with collector_paused():
            assert not gc.isenabled()
            collections.clear()  # the one that collected what was there before the block
            # Cycles enough for dozens of young collections, were the collector on.
            for _ in range(100_000):
                cycle: list[object] = []
                cycle.append(cycle)
            assert collections == []
        assert gc.isenabled()
    finally:
        gc.callbacks.remove(counted)
        gc.unfreeze()
