"""Thread leases on PostgreSQL: one run a thread across processes, and a dead holder's
threads free at once.

Each "node" here is what a gateway process is to the lease table: a listening connection
whose backend proves it alive, registered under its id.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import psycopg
import pytest
from psycopg.rows import TupleRow

from gateway.store.leases import DeadLease, Held, Taken
from gateway.store.postgres import leases, notify
from tests.support.budgets import scaled
from tests.support.postgres import Postgres

pytestmark = pytest.mark.process

Conn = psycopg.AsyncConnection[TupleRow]


@pytest.fixture
async def url(postgres: Postgres) -> str:
    return await postgres.fresh_cluster_database()


@pytest.fixture
async def work(url: str) -> AsyncIterator[Conn]:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        yield conn


async def node(url: str) -> tuple[str, Conn]:
    """A new node: its id and its listening connection (close it: the node dies)."""
    node_id = uuid.uuid4().hex
    conn = await psycopg.AsyncConnection.connect(url, autocommit=True)
    await leases.register_node(conn, node_id)
    return node_id, conn


async def take(conn: Conn, node_id: str, thread: str = "t1", ttl: float = 60) -> Taken | None:
    return await leases.take(
        conn, thread_id=thread, node_id=node_id, user_id="u1", run_id="r1", ttl=ttl
    )


async def test_a_thread_held_by_one_live_process_is_refused_to_another(url: str, work: Conn):
    (a, a_conn), (b, b_conn) = await node(url), await node(url)
    try:
        assert who(await take(work, a)) == ("t1", None)
        assert await take(work, b) is None
        assert await leases.held(work, "t1") == Held(a, "u1", "r1")
        # Its holder takes it again (a second run of that process): still its own.
        assert who(await take(work, a)) == ("t1", None)
        assert who(await take(work, b, thread="t2")) == ("t2", None)
    finally:
        await a_conn.close()
        await b_conn.close()


async def test_a_release_tells_the_cluster_only_when_it_let_a_wanted_lease_go(url: str, work: Conn):
    (a, a_conn), (b, b_conn) = await node(url), await node(url)
    try:
        await notify.listen(b_conn, "b")
        await take(work, a)
        assert await leases.release(work, node_id=a, threads=[("t1", "nobody waits")]) == ["t1"]
        await take(work, a)
        assert await leases.want(work, "t1")  # b waits for it
        # Not b's to release: nothing is released, and nothing said.
        assert await leases.release(work, node_id=b, threads=[("t1", "not sent")]) == []
        assert await leases.release(work, node_id=a, threads=[("t1", "released t1")]) == ["t1"]
        heard = [n.payload async for n in b_conn.notifies(timeout=scaled(5), stop_after=1)]
        assert heard == ["released t1"]
        assert await leases.held(work, "t1") is None
        assert not await leases.want(work, "t1")  # nothing held: b may take it at once
    finally:
        await a_conn.close()
        await b_conn.close()


async def test_leases_let_go_of_and_messages_told_are_one_statement(url: str, work: Conn):
    (a, a_conn), (b, b_conn), (c, c_conn) = await node(url), await node(url), await node(url)
    x, y, z = (
        f'{{"type":"threads","origin":"{a}","changes":[["u1","{t}","updated"]]}}' for t in "xyz"
    )
    try:
        await notify.listen(b_conn, b)
        await notify.listen(c_conn, c)
        assert await leases.watch_users(work, b, ["u1"])  # c watches no thread of u1's
        for thread in ("t1", "t2", "t3"):
            await take(work, a, thread=thread)
        assert await leases.want(work, "t2")  # b waits for t2 alone
        threads = [("t1", "released t1"), ("t2", "released t2"), ("t4", "not held")]
        released = await leases.release(work, node_id=a, threads=threads, told=[x, y])
        assert sorted(released) == ["t1", "t2"]
        heard = [n.payload async for n in b_conn.notifies(timeout=scaled(5), stop_after=3)]
        assert sorted(heard) == sorted(["released t2", x, y])
        assert await leases.held(work, "t3") == Held(a, "u1", "r1")  # not named: kept
        # Messages alone, with no lease to let go of.
        assert await leases.release(work, node_id=a, threads=[], told=[z]) == []
        heard = [n.payload async for n in b_conn.notifies(timeout=scaled(5), stop_after=1)]
        assert heard == [z]
        # c heard the release b waited for, on the cluster's channel, and nothing of u1's.
        heard = [n.payload async for n in c_conn.notifies(timeout=0.3)]
        assert heard == ["released t2"]
    finally:
        for conn in (a_conn, b_conn, c_conn):
            await conn.close()


async def test_a_released_lease_is_free_to_any_process(url: str, work: Conn):
    (a, a_conn), (b, b_conn) = await node(url), await node(url)
    try:
        await take(work, a)
        assert await leases.release(work, node_id=b, threads=[("t1", None)]) == []  # not b's
        assert await take(work, b) is None
        assert await leases.release(work, node_id=a, threads=[("t1", None)]) == ["t1"]
        assert await leases.held(work, "t1") is None
        # Nobody held it: nothing was cut off, nothing to close.
        assert who(await take(work, b)) == ("t1", None)
    finally:
        await a_conn.close()
        await b_conn.close()


async def test_a_lease_not_renewed_runs_out_and_is_taken_from_its_holder(url: str, work: Conn):
    (a, a_conn), (b, b_conn) = await node(url), await node(url)
    try:
        await take(work, a, ttl=0.3)
        assert await take(work, b) is None
        await asyncio.sleep(0.5)
        assert await leases.dead(work, b, 10) == [DeadLease("t1", "u1", a)]
        # Taken from a (alive, but it stopped renewing): b closes what a cut off.
        assert who(await take(work, b)) == ("t1", a)
        assert await leases.held(work, "t1") == Held(b, "u1", "r1")
    finally:
        await a_conn.close()
        await b_conn.close()


async def test_the_heartbeat_keeps_a_lease_past_its_ttl(url: str, work: Conn):
    (a, a_conn), (b, b_conn) = await node(url), await node(url)
    try:
        await take(work, a, ttl=0.4)
        for _ in range(4):
            await asyncio.sleep(0.2)
            assert await leases.renew(work, node_id=a, threads=["t1"], ttl=0.4) == 1
        assert await take(work, b) is None
        assert await leases.dead(work, b, 10) == []
    finally:
        await a_conn.close()
        await b_conn.close()


async def test_the_heartbeat_renews_only_the_leases_it_is_told_its_process_holds(
    url: str, work: Conn
):
    """A lease whose release failed is no longer its process's: renewed with the rest, it
    was held forever; left out, it runs out for another process to take."""
    (a, a_conn), (b, b_conn) = await node(url), await node(url)
    try:
        for thread in ("t1", "t2"):
            await take(work, a, thread=thread, ttl=0.3)
        await asyncio.sleep(0.5)  # both ran out
        assert await leases.renew(work, node_id=a, threads=["t1", "t3"], ttl=60) == 1
        assert await take(work, b, thread="t1") is None
        assert who(await take(work, b, thread="t2")) == ("t2", a)
    finally:
        await a_conn.close()
        await b_conn.close()


async def test_a_holder_whose_connection_is_gone_is_dead_at_once(url: str, work: Conn):
    (a, a_conn), (b, b_conn) = await node(url), await node(url)
    try:
        await take(work, a, ttl=600)
        await take(work, a, thread="t2", ttl=600)
        # As a SIGKILL does: the backend goes when its client's socket closes.
        await a_conn.close()
        await _until_backend_gone(work, a)
        assert sorted(lease.thread_id for lease in await leases.dead(work, b, 10)) == ["t1", "t2"]
        assert await leases.held(work, "t1") is None
        assert who(await take(work, b)) == ("t1", a)
        assert [lease.thread_id for lease in await leases.dead(work, b, 10)] == ["t2"]
    finally:
        await b_conn.close()


async def test_a_process_never_sees_its_own_leases_as_dead(url: str, work: Conn):
    a, a_conn = await node(url)
    try:
        await take(work, a, ttl=0.1)
        await asyncio.sleep(0.3)
        assert await leases.dead(work, a, 10) == []
    finally:
        await a_conn.close()


async def test_of_two_processes_racing_for_a_free_or_dead_lease_one_wins(url: str):
    nodes = [await node(url) for _ in range(6)]
    conns = [await psycopg.AsyncConnection.connect(url, autocommit=True) for _ in nodes]
    try:
        results = await asyncio.gather(
            *(take(conn, node_id) for conn, (node_id, _) in zip(conns, nodes, strict=True))
        )
        assert sum(result is not None for result in results) == 1
        winner = next(i for i, result in enumerate(results) if result is not None)
        await nodes[winner][1].close()  # the winner dies: the rest race for its lease
        await _until_backend_gone(conns[0], nodes[winner][0])
        rest = [i for i in range(len(nodes)) if i != winner]
        results = await asyncio.gather(*(take(conns[i], nodes[i][0]) for i in rest))
        assert [who(r) for r in results if r is not None] == [("t1", nodes[winner][0])]
    finally:
        for conn in conns:
            await conn.close()
        for _, listening in nodes:
            await listening.close()


async def test_a_node_that_leaves_hands_what_it_still_held_to_the_others(url: str, work: Conn):
    (a, a_conn), (b, b_conn) = await node(url), await node(url)
    try:
        await take(work, a)
        await take(work, a, thread="t2")
        async with work.transaction():
            assert sorted(await leases.forget_node(work, a)) == ["t1", "t2"]
        # Runs its stop cut off: taken from it at once, as from a dead holder, and closed.
        assert who(await take(work, b)) == ("t1", a)
    finally:
        await a_conn.close()
        await b_conn.close()


async def _until_backend_gone(conn: Conn, node_id: str) -> None:
    """PostgreSQL notices a closed client's socket a moment after it closes."""
    for _ in range(100):
        cursor = await conn.execute(
            "SELECT count(*) FROM gateway_live_nodes WHERE node_id = %s", (node_id,)
        )
        row = await cursor.fetchone()
        if row is not None and row[0] == 0:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"node {node_id}'s backend is still there")


def who(taken: Taken | None) -> tuple[str, str | None] | None:
    """A lease taken, as the thread and the dead holder it was taken from (its epoch aside)."""
    return None if taken is None else (taken.thread_id, taken.from_dead)


async def test_a_lease_gets_a_new_epoch_whenever_it_changes_hands(url: str, work: Conn):
    (a, a_conn), (b, b_conn) = await node(url), await node(url)
    try:

        async def epoch(node_id: str, ttl: float = 60) -> int | None:
            taken = await take(work, node_id, ttl=ttl)
            return None if taken is None else taken.epoch

        first = await epoch(a, ttl=0.3)
        assert first is not None
        assert await epoch(a, ttl=0.3) == first  # its holder's own again: the same
        await asyncio.sleep(0.5)
        taken_over = await epoch(b)  # from a, whose lease ran out
        assert taken_over is not None and taken_over > first
        assert await leases.release(work, node_id=b, threads=[("t1", None)]) == ["t1"]
        again = await epoch(b)  # released and taken anew: never an epoch seen before
        assert again is not None and again > taken_over
    finally:
        await a_conn.close()
        await b_conn.close()


async def test_a_process_joining_behind_a_frozen_transaction_holds_back_no_other(
    url: str, work: Conn
):
    """A process frozen inside a transaction that read the processes' table: the joining
    process's lock gives way between tries, so another process's batch reading the table
    goes on (waiting behind the lock, it waited for the frozen one's end)."""
    async with await psycopg.AsyncConnection.connect(url) as frozen:
        await frozen.execute("SELECT count(*) FROM gateway_nodes")  # its transaction stays open
        joining = asyncio.create_task(node(url))
        waited = "SELECT count(*) FROM pg_locks WHERE mode = 'AccessExclusiveLock' AND NOT granted"
        while not (await (await work.execute(waited)).fetchone() or (0,))[0]:
            assert not joining.done()
            await asyncio.sleep(0.01)
        # A batch's read of the live processes, while the join still waits.
        await asyncio.wait_for(work.execute("SELECT count(*) FROM gateway_nodes"), scaled(20))
        assert not joining.done()
        await frozen.rollback()
        _, conn = await asyncio.wait_for(joining, scaled(20))
        await conn.close()
