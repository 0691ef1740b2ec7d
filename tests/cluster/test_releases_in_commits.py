"""A run's lease goes in the store's commit of its last frames, and the cluster's thread
changes in the store's commits too: none costs a statement of its own on the event loop's
connection, and a batch's releases and changes are one statement of its transaction. A
take waits for a release of its thread still in the writer's queue; a release the writer
could not commit is made on the working connection instead."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest

from gateway.cluster.postgres import PostgresCluster
from gateway.store.frames import LoggedFrame
from gateway.store.postgres import leases
from gateway.store.service import SessionService
from gateway.store.writes import ReleaseLeases
from tests.support.budgets import scaled
from tests.support.cluster_hub import Heard, until
from tests.support.postgres import Postgres
from tests.support.stores import session_store

pytestmark = pytest.mark.process


@pytest.fixture
async def url(postgres: Postgres) -> str:
    return await postgres.fresh_cluster_database()


@pytest.fixture
async def store(url: str) -> AsyncIterator[SessionService]:
    store = session_store(url)
    await store.open()
    try:
        yield store
    finally:
        await store.close()


async def started(url: str, heard: Heard) -> PostgresCluster:
    cluster = PostgresCluster(url, lease_seconds=30, check_seconds=30)
    await cluster.start(heard)
    return cluster


def counting(cluster: PostgresCluster, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The statements of the cluster's working connection from now on."""
    working = cluster._working
    assert working is not None
    execute = working.execute
    sent: list[str] = []

    async def counted(query: Any, params: Any = None, **options: Any) -> Any:
        sent.append(str(query).split(None, 1)[0])
        return await execute(query, params, **options)

    monkeypatch.setattr(working, "execute", counted)
    return sent


async def holder(url: str, thread_id: str) -> str | None:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as look:
        cursor = await look.execute(
            "SELECT holder FROM gateway_leases WHERE thread_id = %s", (thread_id,)
        )
        row = await cursor.fetchone()
    return None if row is None else str(row[0])


async def test_a_runs_lease_goes_in_the_commit_of_its_last_frames(
    url: str, store: SessionService, monkeypatch: pytest.MonkeyPatch
) -> None:
    heard_a, heard_b = Heard(), Heard()
    a, b = await started(url, heard_a), await started(url, heard_b)
    try:
        await b.watch("u")  # told of u's changes: a connection of u's is there
        a.commit_with(store.submit_cluster)
        await store.create_session(app_name="app", user_id="u", session_id="t1")
        for thread in ("t1", "t2"):
            assert await a.take(thread, "u", "r1") is not None
        sent = counting(a, monkeypatch)
        last = store.append_frames("app", "u", "t1", [LoggedFrame(1, b"x", None, None)])
        released = [a.release("t1", last), a.release("t2")]
        a.thread_changed("u", "t1", "updated")
        await asyncio.wait_for(asyncio.gather(last, *released), scaled(5))
        assert sent == []  # nothing on the working connection
        assert await holder(url, "t1") is None and await holder(url, "t2") is None
        await until(lambda: heard_b.changes == [("u", "t1", "updated")])
        assert heard_a.changes == []  # its own changes are not news to it
        assert await b.take("t1", "u", "r2") is not None
    finally:
        await a.close()
        await b.close()


async def test_a_take_waits_for_its_threads_release_still_queued(url: str) -> None:
    cluster = await started(url, Heard())
    queued: list[tuple[ReleaseLeases, asyncio.Future[object]]] = []

    def submit(write: ReleaseLeases) -> asyncio.Future[object]:
        committed: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        queued.append((write, committed))
        return committed

    try:
        cluster.commit_with(submit)
        assert await cluster.take("t1", "u", "r1") is not None
        released = cluster.release("t1")
        ((write, committed),) = queued
        assert [thread for thread, _ in write.threads] == ["t1"]
        taking = asyncio.create_task(cluster.take("t1", "u", "r2"))
        await asyncio.sleep(0.2)
        assert not taking.done()  # the lease it would take is about to go
        # Committed: the lease is gone as the writer would have let go of it, and the take
        # goes on, the thread's lease anew.
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await conn.execute("DELETE FROM gateway_leases WHERE thread_id = 't1'")
        committed.set_result([["t1"]])
        assert await asyncio.wait_for(taking, scaled(5)) is not None
        assert released.done()
        assert await holder(url, "t1") == cluster.node_id
    finally:
        await cluster.close()


async def test_a_release_the_writer_could_not_commit_is_made_on_the_working_connection(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    cluster = await started(url, Heard())
    failing: list[asyncio.Future[object]] = []

    def submit(write: ReleaseLeases) -> asyncio.Future[object]:
        committed: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        failing.append(committed)
        return committed

    try:
        cluster.commit_with(submit)
        assert await cluster.take("t1", "u", "r1") is not None
        sent = counting(cluster, monkeypatch)
        released = cluster.release("t1")
        failing[0].set_exception(RuntimeError("the session store could not commit"))
        await asyncio.wait_for(released, scaled(5))
        assert sent == ["WITH"]
        assert await holder(url, "t1") is None
    finally:
        await cluster.close()


async def test_a_lease_whose_release_failed_everywhere_runs_out_for_another_process(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A release the writer could not commit, nor the working connection make, leaves the
    lease in the table: the heartbeat no longer renews it (it renewed every lease of its
    node, so the thread stayed held forever), and it runs out for another process."""
    holding = PostgresCluster(url, lease_seconds=0.6, check_seconds=0.1)
    heard = Heard()
    await holding.start(Heard())
    other = PostgresCluster(url, lease_seconds=30, check_seconds=0.1)
    await other.start(heard)
    try:
        assert await holding.take("t1", "u", "r1") is not None

        async def cannot(*args: Any, **kwargs: Any) -> list[str]:
            raise psycopg.OperationalError("the database went away meanwhile")

        monkeypatch.setattr(leases, "release", cannot)
        await asyncio.wait_for(holding.release("t1"), scaled(5))
        assert await holder(url, "t1") == holding.node_id  # still there, its holder alive
        await until(lambda: heard.dead)
        assert {(lease.thread_id, lease.holder) for lease in heard.dead} == {
            ("t1", holding.node_id)
        }
    finally:
        await holding.close()
        await other.close()
