"""A PostgreSQL connection's calls run on one thread of its own, in order, each handed
there without an executor's machinery (``own_thread``): a caller gets the call's result
or its error, and one that stops waiting leaves its call to run before the next."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading

import pytest

from gateway.store.postgres.connection import Connection
from gateway.store.postgres.own_thread import OwnThread
from tests.support.counting import counting
from tests.support.postgres import Postgres


@pytest.mark.unit
async def test_calls_run_in_order_on_one_thread_with_their_results_and_errors() -> None:
    own = OwnThread("test-own")
    ran: list[tuple[int, int]] = []

    def record(number: int) -> int:
        ran.append((number, threading.get_ident()))
        return number * 10

    def fails() -> None:
        raise ValueError("its own")

    try:
        results = await asyncio.gather(*(own.call(lambda n=n: record(n)) for n in range(20)))
        assert results == [n * 10 for n in range(20)]
        assert [n for n, _ in ran] == list(range(20))
        (thread,) = {ident for _, ident in ran}
        assert thread != threading.get_ident()
        with pytest.raises(ValueError, match="its own"):
            await own.call(fails)
    finally:
        own.stop()


@pytest.mark.unit
async def test_a_caller_that_stops_waiting_leaves_its_call_to_run_first() -> None:
    own = OwnThread("test-own")
    release = threading.Event()
    ran: list[str] = []

    def slow() -> None:
        release.wait(10)
        ran.append("slow")

    try:
        waiting = asyncio.ensure_future(own.call(slow))
        await asyncio.sleep(0)
        waiting.cancel()
        later = own.call(lambda: ran.append("later"))
        release.set()
        await later
        assert ran == ["slow", "later"]
    finally:
        own.stop()


@pytest.mark.process
async def test_a_connections_calls_go_through_no_executor(
    postgres: Postgres, monkeypatch: pytest.MonkeyPatch
) -> None:
    submitted = counting(monkeypatch, concurrent.futures.ThreadPoolExecutor, "submit")
    conn = Connection(postgres.fresh_database(), name="test-conn", configure=lambda _: None)
    await conn.open()
    try:
        threads = {await conn.run(lambda _: threading.get_ident()) for _ in range(5)}
        assert len(threads) == 1 and threading.get_ident() not in threads
        assert await conn.run(lambda db: db.execute("SELECT 41 + 1").fetchone()) == (42,)
        assert submitted == []
    finally:
        await conn.close()
