"""A process's listening connection: notices read straight from its socket, one callback
for as long as it listens, and a lost connection told and listened on again."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import psycopg
import pytest

from gateway.cluster.postgres import PostgresCluster
from gateway.store.postgres import notify
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
