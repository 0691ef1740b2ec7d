"""A process's listening connection: notices read straight from its socket, one callback
for as long as it listens, and a lost connection told and listened on again."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest

from gateway.cluster.postgres import PostgresCluster
from gateway.store.postgres import leases, notify
from gateway.store.postgres.cursors import AsyncKeptCursors
from tests.support.budgets import scaled
from tests.support.cluster_hub import Heard, until
from tests.support.counting import counting
from tests.support.postgres import Postgres

pytestmark = pytest.mark.process


@pytest.fixture
async def url(postgres: Postgres) -> str:
    return postgres.fresh_database()


@pytest.fixture
async def listener(url: str) -> AsyncIterator[tuple[PostgresCluster, Heard]]:
    cluster, heard = PostgresCluster(url, lease_seconds=30, check_seconds=0.1), Heard()
    try:
        await cluster.start(heard)
        yield cluster, heard
    finally:
        await cluster.close()


async def test_notices_committed_apart_wake_one_callback_not_a_wait_each(
    listener: tuple[PostgresCluster, Heard], url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each commit of another process's frames is a wake-up of its own; psycopg's
    ``notifies()`` registered the socket with the event loop and took it off again at
    each (a future, a task switch: most of ~90 µs of the loop's CPU a notice)."""
    cluster, heard = listener
    assert cluster._listening is not None
    socket = cluster._listening.pgconn.socket
    loop = asyncio.get_running_loop()
    registered = counting(monkeypatch, loop, "add_reader")
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        for seq in range(1, 21):  # each heard before the next is sent: 20 wake-ups
            await notify.notify(conn, [notify.committed("t1", seq) or ""])
            await until(lambda seq=seq: heard.commits[-1:] == [("t1", seq)])
    assert heard.commits == [("t1", seq) for seq in range(1, 21)]
    assert cluster.notices["Committed"] == 20
    assert socket not in [call.args[0] for call in registered]


async def test_a_lost_listening_connection_is_told_then_listened_on_again(
    listener: tuple[PostgresCluster, Heard], url: str
) -> None:
    cluster, heard = listener
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        # The listening backend is the node's proof of life (``gateway_nodes.pid``).
        await conn.execute(
            "SELECT pg_terminate_backend(pid) FROM gateway_nodes WHERE node_id = %s",
            (cluster.node_id,),
        )
        await until(lambda: heard.losses == 1)  # its runs stop: others may take its threads
        await until(lambda: cluster._listening is not None)
        await notify.notify(conn, [notify.committed("t1", 7) or ""])
        await until(lambda: heard.commits == [("t1", 7)])


async def test_a_process_listening_again_is_registered_again_if_its_row_was_forgotten(
    listener: tuple[PostgresCluster, Heard], url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a process's listening connection is lost, its backend is gone, so another
    process starting meanwhile forgets its row (``leases.forget_dead_nodes``). Listening
    again, it names its new backend in a row of its own again: without one, no batch would
    tell it of frames under its channel, and its leases would look dead to every taker."""
    cluster, heard = listener
    may_listen = asyncio.Event()
    listen = cluster._listen

    async def held_back() -> None:  # the row is forgotten before it listens again
        await may_listen.wait()
        await listen()

    monkeypatch.setattr(cluster, "_listen", held_back)
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(
            "SELECT pg_terminate_backend(pid) FROM gateway_nodes WHERE node_id = %s",
            (cluster.node_id,),
        )
        await until(lambda: heard.losses == 1)
        deadline = time.monotonic() + scaled(5)
        while not await leases.forget_dead_nodes(conn):  # once its backend has left
            assert time.monotonic() < deadline, "its row was never forgotten"
            await asyncio.sleep(0.01)
        may_listen.set()
        await until(lambda: cluster._listening is not None)
        assert cluster._listening is not None
        row = await (
            await conn.execute(
                "SELECT n.pid FROM gateway_nodes n JOIN gateway_live_nodes USING (node_id)"
                " WHERE node_id = %s",
                (cluster.node_id,),
            )
        ).fetchone()
        assert row == (cluster._listening.info.backend_pid,)


async def test_a_listening_connection_that_fails_to_register_is_closed(
    listener: tuple[PostgresCluster, Heard], url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Listening again, a connection whose node fails to register is closed before the
    next try: each failed try would leave a backend open on the server otherwise."""
    cluster, heard = listener
    opened: list[psycopg.AsyncConnection[Any]] = []
    connect = psycopg.AsyncConnection.connect

    async def kept(*args: Any, **kwargs: Any) -> psycopg.AsyncConnection[Any]:
        conn = await connect(*args, **kwargs)
        opened.append(conn)
        return conn

    register, failures = leases.register_node, [psycopg.OperationalError("cut"), None]

    async def failing_once(conn: psycopg.AsyncConnection[Any], node_id: str) -> None:
        if (failure := failures.pop(0)) is not None:
            raise failure
        await register(conn, node_id)

    # The working connection's class keeps its own: only listening connections are counted.
    monkeypatch.setattr(AsyncKeptCursors, "connect", AsyncKeptCursors.connect)
    monkeypatch.setattr(psycopg.AsyncConnection, "connect", kept)
    monkeypatch.setattr(leases, "register_node", failing_once)
    async with await connect(url, autocommit=True) as conn:
        await conn.execute(
            "SELECT pg_terminate_backend(pid) FROM gateway_nodes WHERE node_id = %s",
            (cluster.node_id,),
        )
        await until(lambda: heard.losses == 1)
        await until(lambda: cluster._listening is not None)
    assert not failures  # it failed once, then registered
    assert [conn.closed for conn in opened] == [True, False]
    assert opened[-1] is cluster._listening
